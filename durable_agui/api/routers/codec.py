"""The remote codec endpoint the Temporal UI calls to show encrypted payloads decoded.

Protocol (Temporal's remote codec server): ``POST /codec/decode`` and ``/codec/encode``
with ``{"payloads": [...]}`` (Payloads in protobuf JSON), answered in the same shape.
Serves only when payload encryption is configured, and only to operators
(``DURABLE_AGUI_CODEC_PRINCIPALS``): decoding reads every thread's messages.
"""

from __future__ import annotations

from fastapi import APIRouter, Request, Response
from google.protobuf import json_format
from google.protobuf.message import Error as ProtobufError
from temporalio.api.common.v1 import Payloads

from durable_agui.api.auth import CodecOperatorDep
from durable_agui.api.deps import SettingsDep
from durable_agui.api.errors import api_error
from durable_agui.core.codec import codec_for

router = APIRouter(prefix="/codec", tags=["codec"])


async def _apply(request: Request, settings: SettingsDep, decode: bool) -> Response:
    codec = codec_for(settings)
    if codec is None:
        raise api_error(404, "CodecDisabled", "payload encryption is not configured")
    try:
        payloads = json_format.Parse(await request.body(), Payloads())
        done = await (
            codec.decode(payloads.payloads) if decode else codec.encode(payloads.payloads)
        )
    except (json_format.ParseError, ProtobufError, ValueError, TypeError, KeyError) as err:
        raise api_error(400, "BadPayloads", f"not Temporal Payloads: {str(err)[:200]}") from err
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
