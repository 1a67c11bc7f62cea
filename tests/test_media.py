"""Media parts through a running stack: image, audio, video and document parts stored as
Strands blocks and listed back as data, refusals before anything reaches the thread, and
URL sources fetched from a real HTTP server on 127.0.0.1 (only where the stack allows)."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from tests.conftest import MEDIA_LIMIT
from tests.media_server import BIG, PDF, PNG_BASE64, MediaServer
from tests.stack import DevStack
from tests.support import (
    CONFIRM_BOOKING,
    persisted_messages,
    post_run,
    run_input,
    text_of,
    waiting_call_ids,
)

PDF_BASE64 = base64.b64encode(PDF).decode("ascii")
SOUND = base64.b64encode(b"RIFF....WAVEfmt ").decode("ascii")
CLIP = base64.b64encode(b"\0\0\0\x18ftypmp42").decode("ascii")


def data_part(kind: str, value: str, mime: str, **extra: Any) -> dict[str, Any]:
    return {"type": kind, "source": {"type": "data", "value": value, "mimeType": mime}, **extra}


def url_part(kind: str, url: str, mime: str | None = None) -> dict[str, Any]:
    source = {"type": "url", "value": url} | ({"mimeType": mime} if mime else {})
    return {"type": kind, "source": source}


def user(message_id: str, *parts: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": message_id,
        "role": "user",
        "content": [{"type": "text", "text": "look"}, *parts],
    }


@pytest.fixture
async def http(media_stack: DevStack) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=media_stack.url, timeout=60) as client:
        yield client


async def test_every_media_kind_is_stored_as_its_block_and_listed_back_as_data(
    http: httpx.AsyncClient, media_stack: DevStack
) -> None:
    parts = [
        data_part("image", PNG_BASE64, "image/png"),
        data_part("audio", SOUND, "audio/wav"),
        data_part("video", CLIP, "video/mp4"),
        data_part("document", PDF_BASE64, "application/pdf", metadata={"name": "Trip plan"}),
    ]
    status, events = await post_run(
        http, "demo", run_input("t-kinds", "r1", [user("u1", *parts)], [])
    )
    assert status == 200 and text_of(events) == "echo: look"
    stored = persisted_messages(media_stack.store, "t-kinds")[0]["content"]
    assert [next(iter(block)) for block in stored] == [
        "text",
        "image",
        "audio",
        "video",
        "document",
    ]
    assert stored[4]["document"]["format"] == "pdf" and stored[4]["document"]["name"] == "Trip plan"
    listed = (await http.get("/threads/t-kinds/messages")).json()["messages"]
    assert listed[0]["content"] == [{"type": "text", "text": "look"}, *parts]


@pytest.mark.parametrize(
    ("part", "status", "error_type", "field"),
    [
        (data_part("audio", SOUND, "audio/x-unknown"), 422, "UnsupportedContent", "mimeType"),
        (data_part("image", "not base64!", "image/png"), 422, "UnsupportedContent", "value"),
        (data_part("document", PDF_BASE64, "application/zip"), 422, "UnsupportedContent", ""),
        (
            {"type": "image", "source": {"type": "file", "value": "file-abc"}},
            422,
            "UnsupportedContent",
            "source",
        ),
        (
            data_part("image", base64.b64encode(b"\0" * (MEDIA_LIMIT + 1)).decode(), "image/png"),
            413,
            "MediaTooLarge",
            "",
        ),
        (url_part("image", "https://example.com/cat.png"), 422, "MediaUrlNotAllowed", "source"),
        (url_part("image", "http://example.com/cat.png"), 422, "MediaUrlNotAllowed", "source"),
        (
            url_part("video", "https://127.0.0.1/v", "video/x-unknown"),
            422,
            "UnsupportedContent",
            "",
        ),
    ],
    ids=[
        "unknown-audio-type",
        "bad-base64",
        "document-type-without-block",
        "provider-file-handle",
        "over-the-media-limit",
        "host-not-allowed",
        "http-to-a-remote-host",
        "url-with-unknown-type",
    ],
)
async def test_a_part_no_block_represents_is_refused_naming_it_and_nothing_starts(
    http: httpx.AsyncClient, part: dict[str, Any], status: int, error_type: str, field: str
) -> None:
    body = run_input("t-refused", "r1", [user("u1", part)], [])
    response = await http.post("/agents/demo", json=body)
    assert response.status_code == status, response.text
    detail = response.json()["detail"]
    assert detail["type"] == error_type
    assert f"messages[0].content[1]{'.source' if field else ''}" in detail["message"]
    assert (await http.get("/threads/t-refused")).status_code == 404


@pytest.mark.parametrize(
    ("path", "mime", "expected_mime"),
    [
        ("/cat.png", None, "image/png"),
        ("/untyped", "image/png", "image/png"),
        ("/to-cat", None, "image/png"),
    ],
    ids=["type-from-the-response", "type-from-the-part", "redirect-on-the-same-host"],
)
async def test_an_allowed_url_is_fetched_by_the_turn_and_listed_as_data(
    http: httpx.AsyncClient,
    media_stack: DevStack,
    media_server: MediaServer,
    path: str,
    mime: str | None,
    expected_mime: str,
) -> None:
    thread = f"t-url{path.replace('/', '-')}"
    part = url_part("image", media_server.url(path), mime)
    status, events = await post_run(http, "demo", run_input(thread, "r1", [user("u1", part)], []))
    assert status == 200 and events[-1]["type"] == "RUN_FINISHED", events
    stored = persisted_messages(media_stack.store, thread)[0]["content"]
    assert stored[1]["image"]["format"] == "png"
    listed = (await http.get(f"/threads/{thread}/messages")).json()["messages"]
    assert listed[0]["content"][1] == data_part("image", PNG_BASE64, expected_mime)


async def test_a_fetched_document_keeps_its_bytes(
    http: httpx.AsyncClient, media_stack: DevStack, media_server: MediaServer
) -> None:
    part = url_part("document", media_server.url("/doc.pdf"))
    status, events = await post_run(http, "demo", run_input("t-doc", "r1", [user("u1", part)], []))
    assert status == 200 and events[-1]["type"] == "RUN_FINISHED", events
    listed = (await http.get("/threads/t-doc/messages")).json()["messages"]
    assert listed[0]["content"][1]["source"] == {
        "type": "data",
        "value": PDF_BASE64,
        "mimeType": "application/pdf",
    }


@pytest.mark.parametrize(
    ("path", "code"),
    [
        ("/missing.png", "MediaFetchFailed"),
        ("/big.png", "MediaTooLarge"),
        ("/to-localhost", "MediaUrlNotAllowed"),
    ],
    ids=["not-found", "over-the-media-limit", "redirect-to-another-host"],
)
async def test_a_fetch_that_fails_ends_the_run_with_one_run_error_and_stores_nothing(
    http: httpx.AsyncClient,
    media_stack: DevStack,
    media_server: MediaServer,
    path: str,
    code: str,
) -> None:
    assert BIG > MEDIA_LIMIT
    thread = f"t-fail{path.replace('/', '-').replace('.', '-')}"
    part = url_part("image", media_server.url(path))
    status, events = await post_run(http, "demo", run_input(thread, "r1", [user("u1", part)], []))
    assert status == 200
    assert events[-1]["type"] == "RUN_ERROR" and events[-1]["code"] == code, events[-1]
    assert "content[1]" in events[-1]["message"]
    assert persisted_messages(media_stack.store, thread) == []
    assert media_server.requests[-1] == path  # a redirect elsewhere is not followed


async def test_url_sources_are_refused_while_fetching_is_off(running_stack: DevStack) -> None:
    part = url_part("image", "https://example.com/cat.png", "image/png")
    async with httpx.AsyncClient(base_url=running_stack.url, timeout=60) as client:
        body = run_input("t-no-fetch", "r1", [user("u1", part)], [])
        response = await client.post("/agents/demo", json=body)
        assert response.status_code == 422
        detail = response.json()["detail"]
        assert detail["type"] == "MediaUrlNotAllowed"
        assert "messages[0].content[1].source" in detail["message"]
        assert "does not fetch" in detail["message"]
        assert (await client.get("/threads/t-no-fetch")).status_code == 404


async def test_a_fetched_part_sent_while_a_call_is_pending_joins_the_closed_call(
    http: httpx.AsyncClient, media_stack: DevStack, media_server: MediaServer
) -> None:
    call = {"id": "u1", "role": "user", "content": 'call confirm_booking {"flight":"XY1"}'}
    status, events = await post_run(
        http, "demo", run_input("t-abandon", "r1", [call], [CONFIRM_BOOKING])
    )
    assert status == 200 and waiting_call_ids(events), events[-1]
    part = url_part("image", media_server.url("/cat.png"))
    status, events = await post_run(
        http, "demo", run_input("t-abandon", "r2", [call, user("u2", part)], [CONFIRM_BOOKING])
    )
    assert status == 200 and events[-1]["type"] == "RUN_FINISHED", events[-1]
    stored = persisted_messages(media_stack.store, "t-abandon")[2]["content"]
    assert [next(iter(block)) for block in stored] == ["toolResult", "text", "image"]
    listed = (await http.get("/threads/t-abandon/messages")).json()["messages"]
    assert listed[-2]["content"][1] == data_part("image", PNG_BASE64, "image/png")
