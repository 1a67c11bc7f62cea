"""The remote codec endpoint the Temporal UI calls to show encrypted payloads decoded.

Protocol (Temporal's remote codec server): ``POST /codec/decode`` and ``/codec/encode``
with ``{"payloads": [...]}`` (Payloads in protobuf JSON), answered in the same shape.
Serves only when payload encryption is configured; callers authenticate like everyone.
"""

from __future__ import annotations

from fastapi import APIRouter, HTTPException, Request, Response
from google.protobuf import json_format
from temporalio.api.common.v1 import Payloads

from api.auth import PrincipalDep
from api.deps import SettingsDep
from durable_agui.codec import codec_for

router = APIRouter(prefix="/codec", tags=["codec"])


async def _apply(request: Request, settings: SettingsDep, decode: bool) -> Response:
    codec = codec_for(settings)
    if codec is None:
        raise HTTPException(
            status_code=404,
            detail={"type": "CodecDisabled", "message": "payload encryption is not configured"},
        )
    try:
        payloads = json_format.Parse(await request.body(), Payloads())
        done = await (
            codec.decode(payloads.payloads) if decode else codec.encode(payloads.payloads)
        )
    except (json_format.ParseError, ValueError) as err:
        raise HTTPException(
            status_code=400, detail={"type": "BadPayloads", "message": str(err)}
        ) from err
    body = json_format.MessageToJson(Payloads(payloads=done))
    return Response(content=body, media_type="application/json")


@router.post("/decode")
async def decode(request: Request, settings: SettingsDep, principal: PrincipalDep) -> Response:
    """Decrypt payloads for display (the Temporal UI's "decode" call)."""
    return await _apply(request, settings, decode=True)


@router.post("/encode")
async def encode(request: Request, settings: SettingsDep, principal: PrincipalDep) -> Response:
    """Encrypt payloads (for operators sending input from the UI)."""
    return await _apply(request, settings, decode=False)
