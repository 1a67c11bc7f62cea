"""The remote codec endpoint the Temporal UI calls to show encrypted payloads decoded.

Protocol (Temporal's remote codec server): ``POST /codec/decode`` and ``/codec/encode``
with ``{"payloads": [...]}`` (Payloads in protobuf JSON), answered in the same shape.
Serves only when payload encryption is configured, and only to operators
(``DURABLE_AGUI_CODEC_PRINCIPALS``): decoding reads every thread's messages.
"""

from __future__ import annotations

import base64
import json

from fastapi import APIRouter, Request, Response
from google.protobuf import json_format
from google.protobuf.message import Error as ProtobufError
from temporalio.api.common.v1 import Payloads

from durable_agui.api.auth import CodecOperatorDep
from durable_agui.api.deps import SettingsDep
from durable_agui.api.errors import api_error, error_responses
from durable_agui.core.codec import codec_for
from durable_agui.core.contract import ErrorType

router = APIRouter(
    prefix="/codec",
    tags=["codec"],
    responses=error_responses(
        {
            400: "Not Temporal Payloads, or a payload that does not decrypt (BadPayloads).",
            403: "The caller is not one of DURABLE_AGUI_CODEC_PRINCIPALS.",
            404: "Payload encryption is not configured (CodecDisabled).",
        }
    ),
)


_BAD_PAYLOADS = (
    'the body must be {"payloads": [...]}: Temporal Payloads in protobuf JSON, each '
    "payload's data and metadata values in base64"
)


def _payloads(body: bytes) -> Payloads:
    """The ``Payloads`` of a request body, strictly: a JSON object whose ``payloads`` is a
    list of objects with base64 ``data`` and base64 ``metadata`` values (protobuf's parser
    alone takes ``[]`` or a ``null`` list as no payloads, and skips bad base64).

    Raises:
        HTTPException: 400 ``BadPayloads`` for anything else.
    """
    try:
        document = json.loads(body)
        entries = document["payloads"]
        if not isinstance(entries, list) or not all(
            isinstance(entry, dict)
            and isinstance(entry.get("metadata", {}), dict)
            and all(
                isinstance(value, str)
                for value in [entry.get("data", ""), *entry.get("metadata", {}).values()]
            )
            for entry in entries
        ):
            raise ValueError("not a list of payloads")
        for entry in entries:
            for value in [entry.get("data", ""), *entry.get("metadata", {}).values()]:
                base64.b64decode(value, validate=True)
        payloads = Payloads()
        json_format.ParseDict(document, payloads)
    except (json_format.ParseError, ProtobufError, ValueError, TypeError, KeyError):
        raise api_error(400, ErrorType.BAD_PAYLOADS, _BAD_PAYLOADS) from None
    return payloads


async def _apply(request: Request, settings: SettingsDep, decode: bool) -> Response:
    codec = codec_for(settings)
    if codec is None:
        raise api_error(404, ErrorType.CODEC_DISABLED, "payload encryption is not configured")
    payloads = _payloads(await request.body())
    try:
        done = await (
            codec.decode(payloads.payloads) if decode else codec.encode(payloads.payloads)
        )
    except (ProtobufError, ValueError, TypeError, KeyError):
        # A payload that says it is encrypted but does not decrypt with the key.
        raise api_error(
            400, ErrorType.BAD_PAYLOADS, "a payload does not decrypt with this key"
        ) from None
    body = json_format.MessageToJson(Payloads(payloads=done))
    return Response(content=body, media_type="application/json")


@router.post("/decode")
async def decode(request: Request, settings: SettingsDep, operator: CodecOperatorDep) -> Response:
    """Decrypt payloads for display (the Temporal UI's "decode" call)."""
    return await _apply(request, settings, decode=True)


@router.post("/encode")
async def encode(request: Request, settings: SettingsDep, operator: CodecOperatorDep) -> Response:
    """Encrypt payloads (for operators sending input from the UI)."""
    return await _apply(request, settings, decode=False)
