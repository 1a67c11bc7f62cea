"""The ``nextCursor`` of ``GET /threads``: Temporal visibility's own next-page token, bound
to the listing it pages (its visibility query and filters), checked before it reaches the
server.

A cursor is base64url (no padding) of 8 bytes of the SHA-256 of the listing, then the token.
Temporal's token is opaque, but the server answers a malformed one with ``UNKNOWN``, which
the SDK retries for seconds before it fails; so only the two shapes Temporal issues pass
(SQL visibility's position, ``{"CloseTime", "StartTime", "RunID"}``, and Elasticsearch's
``{"SearchAfter": [...]}``), each field checked, and anything else is a 422 here.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from typing import Annotated

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, StringConstraints, TypeAdapter

from durable_agui.core.contract import ErrorType
from durable_agui.core.errors import ThreadRefused

MAX_CURSOR = 400
"""Longest cursor (characters) ``GET /threads`` takes: Temporal's tokens are 60-200 bytes."""

_QUERY_DIGEST = 8


class _SqlPosition(BaseModel):
    """SQL visibility's token (SQLite, PostgreSQL, MySQL): the last row's sort key."""

    model_config = ConfigDict(extra="forbid", strict=True)
    close_time: AwareDatetime = Field(alias="CloseTime")
    start_time: AwareDatetime = Field(alias="StartTime")
    run_id: Annotated[str, StringConstraints(pattern=r"^[0-9a-f-]{0,64}$")] = Field(alias="RunID")


class _SearchAfter(BaseModel):
    """Elasticsearch visibility's token: the last hit's sort values."""

    model_config = ConfigDict(extra="forbid", strict=True)
    search_after: list[int | Annotated[str, StringConstraints(max_length=128)] | None] = Field(
        alias="SearchAfter", max_length=4
    )


_TOKEN: TypeAdapter[_SqlPosition | _SearchAfter] = TypeAdapter(_SqlPosition | _SearchAfter)


def bad_cursor() -> ThreadRefused:
    return ThreadRefused(422, ErrorType.INVALID_REQUEST, "cursor: not a nextCursor of this listing")


def _query_digest(query: str) -> bytes:
    return hashlib.sha256(query.encode()).digest()[:_QUERY_DIGEST]


def cursor_of(query: str, token: bytes) -> str:
    """The cursor of the page after the one read for ``query`` (the listing: its visibility
    query and filters, as text), whose token is ``token``."""
    return base64.urlsafe_b64encode(_query_digest(query) + token).decode().rstrip("=")


def read_cursor(cursor: str, query: str) -> bytes:
    """The visibility token that ``cursor`` carries for ``query``.

    Raises:
        ThreadRefused: 422 ``InvalidRequest`` for anything but a cursor of this query
            (another filter's or principal's, too) whose token has one of Temporal's shapes.
    """
    try:
        raw = base64.urlsafe_b64decode(cursor.encode("ascii") + b"=" * (-len(cursor) % 4))
    except (ValueError, binascii.Error):
        raise bad_cursor() from None
    token = raw[_QUERY_DIGEST:]
    if raw[:_QUERY_DIGEST] != _query_digest(query) or not token:
        raise bad_cursor()
    try:
        _TOKEN.validate_json(token)
    except ValueError:  # pydantic's ValidationError is a ValueError
        raise bad_cursor() from None
    return token
