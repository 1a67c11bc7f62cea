"""A turn's user media, checked again and fetched: URL sources become data sources.

The API refuses what no Strands block represents before anything reaches the thread; a turn
checks again (the workflow may hold input from an older API, and the settings of the worker
are the ones that fetch). Only hosts in ``Settings.media_fetch_hosts`` are fetched, with
``httpx``: ``https`` (``http`` for loopback hosts), at most ``max_media_bytes``, within
``media_fetch_timeout_s``, redirects followed by hand and only on the same host. The bytes
then go to the session like inline data, so ``GET /threads/{id}/messages`` shows them as
data sources.
"""

from __future__ import annotations

import asyncio
import base64
from typing import Any
from urllib.parse import urljoin

import httpx
from temporalio.exceptions import ApplicationError

from durable_agui.core.contract import ErrorType, UserInput
from durable_agui.core.settings import Settings
from durable_agui.translation.content import (
    ContentRefused,
    check_media_size,
    check_user_part,
    media_format,
    media_type,
    same_host,
    url_refusal,
)

MAX_REDIRECTS = 5
"""Redirects one media fetch follows (each on the URL's own host)."""


def _refused(err: ContentRefused) -> ApplicationError:
    """A part the turn cannot take: not retried (another attempt would refuse it alike),
    nothing persisted yet."""
    return ApplicationError(err.message, type=err.error_type, non_retryable=True)


def _fetch_failed(where: str, why: str) -> ContentRefused:
    return ContentRefused(422, ErrorType.MEDIA_FETCH_FAILED, f"fetching {where}.source: {why}")


async def _fetch(
    http: httpx.AsyncClient, url: str, where: str, settings: Settings
) -> tuple[bytes, str | None]:
    """The bytes at ``url`` and the response's media type; redirects re-checked.

    Raises:
        ContentRefused: ``MediaUrlNotAllowed`` (a redirect off the host, or to a URL
            ``url_refusal`` refuses), ``MediaTooLarge``, ``MediaFetchFailed`` (a status
            other than 200, too many redirects).
    """
    current = url
    for _ in range(MAX_REDIRECTS + 1):
        async with http.stream("GET", current) as response:
            if response.is_redirect:
                target = urljoin(current, response.headers.get("location", ""))
                refusal = url_refusal(target, settings.media_fetch_hosts)
                if refusal is None and not same_host(url, target):
                    refusal = "a redirect may not leave the URL's host"
                if refusal is not None:
                    raise ContentRefused(
                        422,
                        ErrorType.MEDIA_URL_NOT_ALLOWED,
                        f"{where}.source redirects elsewhere: {refusal}",
                    )
                current = target
                continue
            if response.status_code != 200:
                raise _fetch_failed(where, f"the server answered HTTP {response.status_code}")
            declared = response.headers.get("content-length", "")
            if declared.isdigit():
                check_media_size(int(declared), where, settings.max_media_bytes)
            body = bytearray()
            async for chunk in response.aiter_bytes():
                body += chunk
                check_media_size(len(body), where, settings.max_media_bytes)
            return bytes(body), response.headers.get("content-type")
    raise _fetch_failed(where, f"more than {MAX_REDIRECTS} redirects")


async def _fetched_part(
    http: httpx.AsyncClient, part: dict[str, Any], where: str, settings: Settings
) -> dict[str, Any]:
    """``part`` with its URL source replaced by the fetched bytes as a data source."""
    source = part["source"]
    try:
        async with asyncio.timeout(settings.media_fetch_timeout_s):
            data, served_type = await _fetch(http, str(source["value"]), where, settings)
    except TimeoutError:
        raise _fetch_failed(
            where, f"no answer within {settings.media_fetch_timeout_s:g} s"
        ) from None
    except httpx.TimeoutException:
        raise _fetch_failed(where, "the server did not answer in time") from None
    except httpx.HTTPError:  # the message names no exception (README: Errors)
        raise _fetch_failed(where, "the server could not be reached") from None
    mime = source.get("mimeType") or served_type or ""
    media_format(str(part["type"]), mime, f"{where}.source")
    value = base64.b64encode(data).decode("ascii")
    return {**part, "source": {"type": "data", "value": value, "mimeType": media_type(mime)}}


async def resolve_media(messages: list[UserInput], settings: Settings) -> list[UserInput]:
    """``messages`` checked part by part (``check_user_part``) with URL sources fetched.

    Raises:
        ApplicationError: the ``ContentRefused`` case (``UnsupportedContent``,
            ``MediaUrlNotAllowed``, ``MediaTooLarge``, ``MediaFetchFailed``), not retried.
    """
    if not any(isinstance(message.content, list) for message in messages):
        return messages
    resolved: list[UserInput] = []
    async with httpx.AsyncClient(
        follow_redirects=False, timeout=settings.media_fetch_timeout_s
    ) as http:
        for message in messages:
            if isinstance(message.content, str):
                resolved.append(message)
                continue
            parts: list[dict[str, Any]] = []
            for index, part in enumerate(message.content):
                where = f"user message {message.message_id[:80]!r} content[{index}]"
                try:
                    check_user_part(
                        part, where, settings.max_media_bytes, settings.media_fetch_hosts
                    )
                    source = part.get("source")
                    if isinstance(source, dict) and source.get("type") == "url":
                        part = await _fetched_part(http, part, where, settings)
                except ContentRefused as err:
                    raise _refused(err) from None
                parts.append(part)
            resolved.append(message.model_copy(update={"content": parts}))
    return resolved
