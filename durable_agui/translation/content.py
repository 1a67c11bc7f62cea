"""Content between AG-UI and Strands: parts and strings one way, content blocks the other.

A user message's parts (AG-UI 1.0: ``text``, ``image``, ``audio``, ``video``, ``document``)
become the Strands content block of the same kind (``user_content_blocks``); a part no block
represents is refused (``ContentRefused``), never dropped. Media carried as base64 ``data``
become bytes; a ``url`` source is fetched by the turn first (``activities/media.py``), only
from hosts the deployment allows (``url_refusal``). Stored blocks come back as AG-UI parts
with data sources (``agui_content``). A client's tool answer keeps its lenient form
(``answer_content_blocks``): images become image blocks, any other part is kept whole as
JSON text.
"""

from __future__ import annotations

import base64
import binascii
import ipaddress
import json
import re
from collections.abc import Iterable
from typing import Any, cast
from urllib.parse import urlsplit

from strands.types.content import ContentBlock

from durable_agui.core.errors import ErrorType

MEDIA_FORMATS: dict[str, dict[str, str]] = {
    "image": {
        "image/png": "png",
        "image/jpeg": "jpeg",
        "image/jpg": "jpeg",
        "image/gif": "gif",
        "image/webp": "webp",
    },
    "audio": {
        "audio/mpeg": "mp3",
        "audio/mp3": "mp3",
        "audio/wav": "wav",
        "audio/x-wav": "wav",
        "audio/wave": "wav",
        "audio/ogg": "ogg",
        "audio/opus": "opus",
        "audio/aac": "aac",
        "audio/x-aac": "x-aac",
        "audio/flac": "flac",
        "audio/mp4": "mp4",
        "audio/x-m4a": "m4a",
        "audio/webm": "webm",
        "audio/l16": "pcm",
    },
    "video": {
        "video/mp4": "mp4",
        "video/webm": "webm",
        "video/quicktime": "mov",
        "video/x-matroska": "mkv",
        "video/mpeg": "mpeg",
        "video/x-flv": "flv",
        "video/x-ms-wmv": "wmv",
        "video/3gpp": "three_gp",
    },
    "document": {
        "application/pdf": "pdf",
        "text/csv": "csv",
        "application/msword": "doc",
        "application/vnd.openxmlformats-officedocument.wordprocessingml.document": "docx",
        "application/vnd.ms-excel": "xls",
        "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": "xlsx",
        "text/html": "html",
        "text/plain": "txt",
        "text/markdown": "md",
    },
}
"""Media type -> Strands format, per part kind (``strands.types.media``: the formats of the
image, audio, video and document blocks). A media type not listed has no block: 422."""
_MIME: dict[str, dict[str, str]] = {
    kind: {fmt: mime for mime, fmt in reversed(formats.items())}
    for kind, formats in MEDIA_FORMATS.items()
}
"""Strands format -> the media type shown for it (the first one listed)."""
LOOPBACK_NAMES = frozenset({"localhost"})
_DOCUMENT_NAME_CHARS = re.compile(r"[^A-Za-z0-9\s\-()\[\]]+")


class ContentRefused(Exception):
    """A user content part the server cannot take: ``status`` 422 or 413, ``error_type``
    naming the case, ``message`` naming the part (``where``) and why."""

    def __init__(self, status: int, error_type: ErrorType, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.error_type = error_type
        self.message = message


def media_type(value: object) -> str:
    """A ``mimeType`` as compared here: lower case, parameters (``; charset=...``) left off."""
    return str(value).split(";")[0].strip().lower()


def media_format(kind: str, mime: object, where: str) -> str:
    """The Strands format of a ``kind`` part with media type ``mime``.

    Raises:
        ContentRefused: 422 ``UnsupportedContent`` for a media type no block of that kind takes.
    """
    fmt = MEDIA_FORMATS[kind].get(media_type(mime))
    if fmt is None:
        raise ContentRefused(
            422,
            ErrorType.UNSUPPORTED_CONTENT,
            f"{where}.mimeType {str(mime)[:80]!r} is not a media type the model takes for "
            f"{kind} parts; send one of {', '.join(sorted(MEDIA_FORMATS[kind]))}",
        )
    return fmt


def _host_and_port(url: str) -> tuple[str, str | None, int | None]:
    """``(scheme, host, port)`` of ``url`` (``host`` ``None`` when it has none)."""
    parts = urlsplit(url)
    try:
        port = parts.port
    except ValueError:
        port = -1
    return parts.scheme.lower(), parts.hostname, port


def is_loopback(host: str) -> bool:
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def url_refusal(url: str, fetch_hosts: Iterable[str]) -> str | None:
    """Why a media URL may not be fetched, or ``None`` when it may: fetching is off (no
    hosts allowed), the URL is not ``https`` (``http`` only for loopback hosts), or its host
    (``host`` or ``host:port`` entries of ``fetch_hosts``) is not allowed."""
    allowed = list(fetch_hosts)
    if not allowed:
        return "this server does not fetch media URLs; send the bytes as a data source"
    scheme, host, port = _host_and_port(url)
    if host is None or port == -1:
        return "it is not an absolute http(s) URL"
    if not _scheme_allowed(scheme, host):
        return "only https URLs are fetched"
    effective = port if port is not None else (443 if scheme == "https" else 80)
    if host in allowed or f"{host}:{effective}" in allowed:
        return None
    return f"host {host!r} is not one this server fetches media from"


def _scheme_allowed(scheme: str | None, host: str) -> bool:
    """``https``, or ``http`` to a loopback host (tests, a sidecar)."""
    return scheme == "https" or (scheme == "http" and is_loopback(host))


def same_host(first: str, second: str) -> bool:
    """Whether two URLs name the same host and port (a redirect may not leave it)."""
    return _host_and_port(first) == _host_and_port(second)


def _decoded(value: object, where: str) -> bytes:
    try:
        return base64.b64decode(str(value), validate=True)
    except (binascii.Error, ValueError):
        raise ContentRefused(
            422, ErrorType.UNSUPPORTED_CONTENT, f"{where}.value is not base64 data"
        ) from None


def _too_large(where: str, size: int, max_bytes: int) -> ContentRefused:
    return ContentRefused(
        413,
        ErrorType.MEDIA_TOO_LARGE,
        f"{where} holds {size} bytes; a media part may hold at most {max_bytes}",
    )


def check_media_size(size: int, where: str, max_bytes: int) -> None:
    """Raises ``ContentRefused`` (413 ``MediaTooLarge``) for media over ``max_bytes``."""
    if size > max_bytes:
        raise _too_large(where, size, max_bytes)


def check_user_part(
    part: dict[str, Any], where: str, max_bytes: int, fetch_hosts: Iterable[str]
) -> None:
    """Check one user content part (JSON, as the contract carries it) can become a block.

    Raises:
        ContentRefused: 422 ``UnsupportedContent`` for a part of another type, a media type
            no block takes, a ``file`` source (a provider's handle) or data that is not
            base64; 422 ``MediaUrlNotAllowed`` for a URL the server does not fetch
            (``url_refusal``); 413 ``MediaTooLarge`` for data over ``max_bytes``.
    """
    kind = part.get("type")
    if kind == "text":
        return
    if kind not in MEDIA_FORMATS:
        raise ContentRefused(
            422,
            ErrorType.UNSUPPORTED_CONTENT,
            f"{where} is a {str(kind)[:40]!r} part; user content parts are "
            "text, image, audio, video or document",
        )
    source = part.get("source")
    source = source if isinstance(source, dict) else {}
    source_type = source.get("type")
    if source_type == "data":
        media_format(str(kind), source.get("mimeType"), f"{where}.source")
        check_media_size(len(_decoded(source.get("value"), f"{where}.source")), where, max_bytes)
    elif source_type == "url":
        refusal = url_refusal(str(source.get("value", "")), fetch_hosts)
        if refusal is not None:
            raise ContentRefused(
                422, ErrorType.MEDIA_URL_NOT_ALLOWED, f"{where}.source is a URL: {refusal}"
            )
        if source.get("mimeType") is not None:
            media_format(str(kind), source["mimeType"], f"{where}.source")
    else:
        raise ContentRefused(
            422,
            ErrorType.UNSUPPORTED_CONTENT,
            f"{where}.source of type {str(source_type)[:40]!r} cannot be sent to the model; "
            "send the bytes as a data source",
        )


def _document_name(part: dict[str, Any], position: int) -> str:
    """A document block's name: ``metadata.name`` (or ``filename``) in the characters
    Bedrock takes (letters, digits, single spaces, ``-()[]``), else ``document-<n>``."""
    metadata = part.get("metadata")
    given = ""
    if isinstance(metadata, dict):
        given = str(metadata.get("name") or metadata.get("filename") or "")
        given = given.rsplit(".", 1)[0] if "." in given else given  # the format says that
    name = " ".join(_DOCUMENT_NAME_CHARS.sub("-", given).split())[:200]
    return name or f"document-{position + 1}"


def _media_block(part: dict[str, Any], where: str, position: int) -> ContentBlock:
    kind = str(part["type"])
    source = part.get("source")
    if not isinstance(source, dict) or source.get("type") != "data":
        raise ContentRefused(
            422, ErrorType.UNSUPPORTED_CONTENT, f"{where}.source was not turned into data"
        )
    fmt = media_format(kind, source.get("mimeType"), f"{where}.source")
    content: dict[str, Any] = {
        "format": fmt,
        "source": {"bytes": _decoded(source.get("value"), f"{where}.source")},
    }
    if kind == "document":
        content["name"] = _document_name(part, position)
    return cast(ContentBlock, {kind: content})


def user_content_blocks(
    content: str | list[dict[str, Any]], where: str = "content"
) -> list[ContentBlock]:
    """AG-UI user message content as Strands content blocks: text as text, each media part
    (with a data source: fetch URL sources first) as the block of its kind.

    Raises:
        ContentRefused: a part no block represents (see ``check_user_part``).
    """
    if isinstance(content, str):
        return [{"text": content}]
    blocks: list[ContentBlock] = []
    for position, part in enumerate(content):
        part_where = f"{where}[{position}]"
        if part.get("type") == "text":
            blocks.append({"text": str(part.get("text", ""))})
        elif part.get("type") in MEDIA_FORMATS:
            blocks.append(_media_block(part, part_where, position))
        else:
            check_user_part(part, part_where, 0, ())  # raises: names the part
    return blocks


def answer_content_blocks(content: str | list[dict[str, Any]]) -> list[ContentBlock]:
    """A client's tool answer (text or content parts) as Strands content blocks: text as
    text, images with base64 data as image blocks, any other part whole as a JSON text
    block, so nothing the client sent is lost."""
    if isinstance(content, str):
        return [{"text": content}]
    return [_answer_block(part) for part in content]


def _answer_block(part: dict[str, Any]) -> ContentBlock:
    if part.get("type") == "text":
        return {"text": str(part.get("text", ""))}
    source = part.get("source")
    source = source if isinstance(source, dict) else {}
    image_format = MEDIA_FORMATS["image"].get(media_type(source.get("mimeType", "")))
    if part.get("type") == "image" and source.get("type") == "data" and image_format:
        try:
            data = base64.b64decode(str(source.get("value", "")), validate=True)
        except (binascii.Error, ValueError):
            data = b""
        if data:
            return cast(
                ContentBlock, {"image": {"format": image_format, "source": {"bytes": data}}}
            )
    return {"text": json.dumps(part, separators=(",", ":"), ensure_ascii=False)}


def agui_content(blocks: list[Any]) -> str | list[dict[str, Any]]:
    """Strands content blocks as AG-UI content: one string for text alone, else parts.

    JSON blocks become compact JSON text; image, audio, video and document blocks become
    parts of their kind with base64 data (a document's name in ``metadata.name``).
    """
    if all("text" in block or "json" in block for block in blocks):
        return render_tool_result(blocks)
    parts: list[dict[str, Any]] = []
    for block in blocks:
        kind = next((kind for kind in MEDIA_FORMATS if kind in block), None)
        if kind is None:
            parts.append({"type": "text", "text": render_tool_result([block])})
            continue
        media = block[kind]
        data = media.get("source", {}).get("bytes", b"")
        part: dict[str, Any] = {
            "type": kind,
            "source": {
                "type": "data",
                "value": base64.b64encode(data).decode("ascii"),
                "mimeType": _MIME[kind].get(media.get("format", ""), "application/octet-stream"),
            },
        }
        if kind == "document" and media.get("name"):
            part["metadata"] = {"name": media["name"]}
        parts.append(part)
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
