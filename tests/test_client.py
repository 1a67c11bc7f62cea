"""The thread client's pure rules, without a server: where a fork may start, which answers
how a listing pages; and a thread's refusal answered as the API's error body
whether or not the app installed ``add_error_handlers``."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from fastapi import Depends, FastAPI
from fastapi.testclient import TestClient
from strands.types.session import SessionMessage

from durable_agui.api.app import add_error_handlers
from durable_agui.api.errors import refusals_as_http
from durable_agui.client import (
    ListedThread,
    ThreadFilter,
    cursor_of,
    fork_index,
    read_cursor,
)
from durable_agui.core.contract import (
    ThreadStatus,
)
from durable_agui.core.errors import ErrorType, ThreadRefused


def _stored(*messages: dict[str, Any]) -> list[SessionMessage]:
    return [SessionMessage(message=m, message_id=i) for i, m in enumerate(messages)]  # type: ignore[arg-type]


HISTORY = _stored(
    {"role": "user", "content": [{"text": "hi"}]},
    {"role": "assistant", "content": [{"text": "hello"}]},
    {"role": "user", "content": [{"text": "weather?"}]},
    {"role": "assistant", "content": [{"toolUse": {"toolUseId": "t1", "name": "w"}}]},
)


@pytest.mark.parametrize(
    ("message_id", "recorded", "index"),
    [
        ("m1", None, 1),  # an answer
        ("m0", None, None),  # a user message
        ("m3", None, None),  # a tool call
        ("m9", None, None),  # beyond the history
        ("m1", 1, None),  # beyond what the thread recorded
        ("x1", None, None),  # not an id of GET /messages
    ],
)
def test_a_fork_starts_only_at_an_answer_the_thread_recorded(
    message_id: str, recorded: int | None, index: int | None
) -> None:
    assert fork_index(HISTORY, recorded, message_id) == index


def _listed(thread_id: str, minutes: int, tags: list[str], title: str | None) -> ListedThread:
    when = datetime(2026, 1, 1, tzinfo=UTC) + timedelta(minutes=minutes)
    return ListedThread(thread_id, ThreadStatus.IDLE, "a", 0, when, title, tags)


def test_a_listing_keeps_a_thread_by_tag_and_title() -> None:
    wanted = ThreadFilter(tag="x", q="PARIS")
    kept = [
        _listed("c", 3, ["x"], "Trip to Paris"),
        _listed("b", 2, ["x"], "paris notes"),
        _listed("a", 1, ["y"], "Paris"),
        _listed("d", 1, ["x"], None),
    ]
    assert [t.thread_id for t in kept if wanted.keeps(t)] == ["c", "b"]


SQL_TOKEN = (
    b'{"CloseTime":"9999-12-31T23:59:59Z","StartTime":"2026-12-03T21:07:26.516261Z",'
    b'"RunID":"01a23dbb-c8b4-73f9-a99b-723585021864"}'
)
QUERY = "WorkflowType = 'AgentThreadWorkflow'"


@pytest.mark.parametrize(
    "token", [SQL_TOKEN, b'{"SearchAfter":[9223372036854775807,1767225600000000000,"r1"]}']
)
def test_a_cursor_carries_visibilitys_token_for_its_query(token: bytes) -> None:
    assert read_cursor(cursor_of(QUERY, token), QUERY) == token


@pytest.mark.parametrize(
    "cursor",
    [
        "not-a-cursor",
        "",
        cursor_of(QUERY + " AND AgentName = 'x'", SQL_TOKEN),  # another query's
        cursor_of(QUERY, b""),
        cursor_of(QUERY, b"garbage"),
        cursor_of(QUERY, b"{}"),
        cursor_of(QUERY, b'{"CloseTime":"x","StartTime":"x","RunID":"x"}'),
        cursor_of(QUERY, SQL_TOKEN.replace(b"Z", b"", 1)),  # no zone
        cursor_of(QUERY, SQL_TOKEN[:-1] + b',"Extra":1}'),
        cursor_of(QUERY, SQL_TOKEN.replace(b"01a23dbb", b"'; DROP")),
        cursor_of(QUERY, b'{"SearchAfter":[[1]]}'),
        cursor_of(QUERY, b'{"SearchAfter":[1,2,3,4,5]}'),
        cursor_of(QUERY, b"\xff\xfe"),
    ],
)
def test_a_cursor_that_is_not_one_is_a_422(cursor: str) -> None:
    with pytest.raises(ThreadRefused) as refused:
        read_cursor(cursor, QUERY)
    assert (refused.value.status, refused.value.type) == (422, ErrorType.INVALID_REQUEST)


@pytest.mark.parametrize(
    ("handlers", "dependency"),
    [(True, False), (True, True), (False, True)],
    ids=["add_error_handlers", "both", "create_router-in-a-bare-app"],
)
def test_a_refusal_is_the_apis_error_body(handlers: bool, dependency: bool) -> None:
    app = FastAPI()

    @app.get("/busy", dependencies=[Depends(refusals_as_http)] if dependency else [])
    async def busy() -> None:
        raise ThreadRefused(429, ErrorType.THREAD_BUSY, "busy")

    if handlers:
        add_error_handlers(app)
    answered = TestClient(app, raise_server_exceptions=False).get("/busy")
    assert answered.status_code == 429
    assert answered.headers["retry-after"] == "1"
    assert answered.json() == {"detail": {"type": "ThreadBusy", "message": "busy"}}
