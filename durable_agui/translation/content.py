"""Content between AG-UI and Strands: parts and strings one way, content blocks the other.

Text stays text, verbatim. Images carried inline as base64 data become Strands image blocks
(bytes) and come back as AG-UI image parts with the same data; any other part is kept
whole as a JSON text block, so nothing a client sent is lost.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any, cast

from strands.types.content import ContentBlock

_IMAGE_FORMATS = {
    "image/png": "png",
    "image/jpeg": "jpeg",
    "image/gif": "gif",
    "image/webp": "webp",
}
_IMAGE_MIME = {fmt: mime for mime, fmt in _IMAGE_FORMATS.items()}


def _part_block(part: dict[str, Any]) -> dict[str, Any]:
    """One AG-UI content part as one Strands content block.

    Text parts become text blocks; images carried inline as base64 data become image blocks;
    any other part is kept whole as a JSON text block so nothing the client sent is lost.
    """
    if part.get("type") == "text":
        return {"text": str(part.get("text", ""))}
    source = part.get("source")
    if not isinstance(source, dict):
        source = {}
    image_format = _IMAGE_FORMATS.get(str(source.get("mimeType", source.get("mime_type", ""))))
    if part.get("type") == "image" and source.get("type") == "data" and image_format:
        try:
            data = base64.b64decode(str(source.get("value", "")), validate=True)
        except (binascii.Error, ValueError):
            data = b""
        if data:
            return {"image": {"format": image_format, "source": {"bytes": data}}}
    return {"text": json.dumps(part, separators=(",", ":"), ensure_ascii=False)}


def user_content_blocks(content: str | list[dict[str, Any]]) -> list[ContentBlock]:
    """AG-UI user message content (text or content parts) as Strands content blocks."""
    if isinstance(content, str):
        return [{"text": content}]
    return [cast(ContentBlock, _part_block(part)) for part in content]


def agui_content(blocks: list[Any]) -> str | list[dict[str, Any]]:
    """Strands content blocks as AG-UI content: one string for text alone, else parts.

    JSON blocks become compact JSON text; image blocks become image parts with base64 data.
    """
    if all("text" in block or "json" in block for block in blocks):
        return render_tool_result(blocks)
    parts: list[dict[str, Any]] = []
    for block in blocks:
        if "image" in block:
            image = block["image"]
            data = image.get("source", {}).get("bytes", b"")
            parts.append(
                {
                    "type": "image",
                    "source": {
                        "type": "data",
                        "value": base64.b64encode(data).decode("ascii"),
                        "mimeType": _IMAGE_MIME.get(
                            image.get("format", ""), "application/octet-stream"
                        ),
                    },
                }
            )
        else:
            parts.append({"type": "text", "text": render_tool_result([block])})
    return parts


def render_tool_result(blocks: list[Any]) -> str:
    """Content blocks as one text: text verbatim, JSON compact, blocks joined by newlines."""
    texts: list[str] = []
    for block in blocks:
        if "text" in block:
            texts.append(block["text"])
        elif "json" in block:
            texts.append(json.dumps(block["json"], separators=(",", ":"), ensure_ascii=False))
        else:
            texts.append(json.dumps({key: "<binary>" for key in block}))
    return "\n".join(texts)
