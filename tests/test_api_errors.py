"""Every HTTP error has the one body ``ErrorBody`` describes, with a type from ``ErrorType``,
and the OpenAPI document says so; the API loads neither the workflow nor the session store.

No Temporal here: each refusal happens before a route would reach a thread.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from temporalio.exceptions import ApplicationError

from durable_agui.api.app import create_app
from durable_agui.api.errors import ErrorBody, from_application_error
from durable_agui.core.contract import ErrorType
from durable_agui.core.settings import Settings

DEEP = b"[" * 40 + b"]" * 40


@pytest.fixture
def http(tmp_path: Path) -> Iterator[TestClient]:
    """The whole app with a client that no refusal here reaches."""
    app = create_app(Settings(data_dir=tmp_path), client=object())  # type: ignore[arg-type]
    with TestClient(app, base_url="http://127.0.0.1") as client:
        yield client


@pytest.mark.parametrize(
    ("method", "path", "request_args", "status", "error_type"),
    [
        ("GET", "/no-such-route", {}, 404, ErrorType.NOT_FOUND),
        ("PUT", "/healthz", {}, 405, ErrorType.METHOD_NOT_ALLOWED),
        ("POST", "/agents/demo", {"content": b"x" * 2_000_000}, 413, ErrorType.REQUEST_TOO_LARGE),
        (
            "POST",
            "/agents/demo",
            {"content": b"hi", "headers": {"content-type": "text/plain"}},
            415,
            ErrorType.UNSUPPORTED_MEDIA_TYPE,
        ),
        ("POST", "/agents/demo", {"content": DEEP}, 422, ErrorType.TOO_DEEP),
        ("POST", "/agents/demo", {"content": b'{"a": "\\ud800"}'}, 422, ErrorType.INVALID_TEXT),
        ("POST", "/agents/demo", {"json": {"threadId": "t"}}, 422, ErrorType.INVALID_REQUEST),
        ("GET", "/healthz", {"headers": {"host": "evil.example"}}, 400, ErrorType.INVALID_HOST),
        (
            "POST",
            "/threads/t/cancel",
            {"headers": {"origin": "https://evil.example"}},
            403,
            ErrorType.CROSS_ORIGIN,
        ),
        ("POST", "/codec/decode", {"json": {"payloads": []}}, 404, ErrorType.CODEC_DISABLED),
    ],
)
def test_every_refusal_has_the_one_error_body(
    http: TestClient,
    method: str,
    path: str,
    request_args: dict[str, Any],
    status: int,
    error_type: ErrorType,
) -> None:
    response = http.request(method, path, **request_args)
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/json"
    body = ErrorBody.model_validate(response.json())
    assert body.detail.type == error_type
    assert set(response.json()["detail"]) == (
        {"type", "message", "errors"}
        if error_type == ErrorType.INVALID_REQUEST
        else {"type", "message"}
    )


def test_a_method_not_allowed_still_says_which_are(http: TestClient) -> None:
    assert http.put("/healthz").headers["allow"] == "GET"


def test_temporal_away_on_the_first_request_is_503_not_500(tmp_path: Path) -> None:
    """A router in an app of one's own connects on its first request; Temporal not
    answering there is the API's 503, with ``Retry-After``, naming no host."""
    settings = Settings(data_dir=tmp_path, temporal_address="127.0.0.1:1")
    client = TestClient(create_app(settings), base_url="http://127.0.0.1")  # no lifespan
    response = client.get("/threads/t")
    assert response.status_code == 503, response.text
    assert response.json()["detail"]["type"] == ErrorType.TEMPORAL_UNAVAILABLE
    assert response.headers["retry-after"] == "5"
    assert "127.0.0.1" not in response.text


def test_the_openapi_document_describes_every_error_body(http: TestClient) -> None:
    document = http.get("/openapi.json").json()
    assert "HTTPValidationError" not in document["components"]["schemas"]
    errors = document["components"]["schemas"]["ErrorType"]["enum"]
    assert sorted(errors) == sorted(ErrorType)
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            statuses = [status for status in operation["responses"] if status[0] in "45"]
            assert statuses, (method, path)  # without authentication, 400 InvalidHost at least
            for status in statuses:
                schema = operation["responses"][status]["content"]["application/json"]["schema"]
                assert schema == {"$ref": "#/components/schemas/ErrorBody"}, (method, path)


@pytest.mark.parametrize(
    ("error_type", "status", "answered_type"),
    [
        (ErrorType.THREAD_BUSY, 429, ErrorType.THREAD_BUSY),
        (ErrorType.UNKNOWN_TOOL_CALL, 409, ErrorType.UNKNOWN_TOOL_CALL),
        # The API's own types are not the thread's: an exception class of that name (its
        # name is an ApplicationError's type) must not pass its message to the client.
        (ErrorType.NOT_FOUND, 503, ErrorType.UPDATE_FAILED),
        ("KeyError", 503, ErrorType.UPDATE_FAILED),
    ],
)
def test_only_the_threads_own_refusals_reach_the_client_with_their_message(
    error_type: str, status: int, answered_type: ErrorType
) -> None:
    err = from_application_error(ApplicationError("/srv/secret/path", type=error_type))
    detail: dict[str, str] = err.detail  # type: ignore[assignment]  # api_error's shape
    assert err.status_code == status
    assert detail["type"] == answered_type
    assert ("/srv/secret" in detail["message"]) == (answered_type == error_type)


def test_the_api_imports_neither_the_workflow_nor_the_session_store() -> None:
    loaded = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, durable_agui.api.app; print(' '.join(sorted(sys.modules)))",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    for room in ("durable_agui.workflows", "durable_agui.activities", "durable_agui.sessions"):
        assert not [name for name in loaded if name.startswith(room)], room
    assert "sqlalchemy" not in loaded
