"""The raw request body's checks, before FastAPI parses it: its size (``RequestBodyCheck``,
an ASGI middleware that refuses an over-long body, chunked or not, before it is read
whole), and that a JSON body is JSON this API takes (nesting, ``NaN``, UTF-8), for apps
with and without the middleware (``checked_body``, a router dependency).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from fastapi import HTTPException, Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from durable_agui.api.decision_page import is_decision_link
from durable_agui.api.errors import api_error, error_response
from durable_agui.api.run_checks import invalid, too_large
from durable_agui.core.contract import ErrorType
from durable_agui.core.json_text import json_body_error


def is_json_media_type(content_types: list[bytes]) -> bool:
    """Whether a body sent with these ``Content-Type`` header values is JSON: none at all
    (FastAPI reads such a body as JSON), or exactly one ``application/json`` or
    ``application/<something>+json`` (RFC 6839), in any letter case, with any parameters.
    Two values are refused: which one a parser believes is not something to leave open."""
    if not content_types:
        return True
    if len(content_types) > 1:
        return False
    media_type = content_types[0].split(b";")[0].strip().lower()
    return media_type == b"application/json" or (
        media_type.startswith(b"application/") and media_type.endswith(b"+json")
    )


def is_decision_form(scope: Scope) -> bool:
    """A body posted to a decision link (its page's form): the one body this API does not
    hold to JSON. The token in its path is its credential, which a cross-site form cannot
    know, so the JSON-only rule's reason (refusing the forms other sites can send) does not
    hold for it; the route reads the form, and answers a page for one it cannot read."""
    return is_decision_link(scope["path"])


def content_refusal(scope: Scope, body: bytes) -> HTTPException | None:
    """What is wrong with the request body ``body`` of the request in ``scope``, or
    ``None``: 415 for a body that is not JSON (``is_json_media_type``), 422 for JSON that
    ``json_body_error`` refuses. An empty body is for the route to judge."""
    if not body:
        return None
    content_types = [v for k, v in scope["headers"] if k.lower() == b"content-type"]
    if is_decision_form(scope):
        return None
    if not is_json_media_type(content_types):
        return api_error(
            415,
            ErrorType.UNSUPPORTED_MEDIA_TYPE,
            "a request body must be JSON: send Content-Type: application/json",
        )
    error = json_body_error(body)
    return invalid(*error) if error is not None else None


BODY_CHECKED = "durable_agui.body_checked"
"""ASGI scope key ``RequestBodyCheck`` sets, so ``checked_body`` does not check twice."""


def checked_body(max_bytes: int) -> Callable[[Request], Awaitable[None]]:
    """A route dependency doing ``RequestBodyCheck``'s checks on the body the route reads
    (for an app without the middleware: an author's own app that includes the router)."""

    async def check(request: Request) -> None:
        if request.scope.get(BODY_CHECKED) or request.method in ("GET", "HEAD", "OPTIONS"):
            return
        body = await request.body()
        if len(body) > max_bytes:
            raise too_large(f"the request body is over {max_bytes} bytes")
        refusal = content_refusal(request.scope, body)
        if refusal is not None:
            raise refusal

    return check


class RequestBodyCheck:
    """ASGI middleware, before any route: 413 for a body over ``max_bytes`` (declared or
    streamed), 415 for a body that is not JSON (``is_json_media_type``; this also refuses
    the ``text/plain`` bodies a cross-site form can send), 422 for a JSON body that
    ``json_body_error`` refuses. All answer with the API's error body; the route never sees
    such a request."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        chunks = None if self._declared_too_large(scope) else await self._read(receive)
        if chunks is None:
            refusal: HTTPException | None = self._too_large()
        else:
            refusal = content_refusal(scope, b"".join(m.get("body", b"") for m in chunks))
        if refusal is not None:
            await error_response(refusal)(scope, receive, send)
            return
        replay = iter(chunks or [])

        async def replayed() -> Message:
            return next(replay, None) or await receive()

        await self.app({**scope, BODY_CHECKED: True}, replayed, send)

    def _declared_too_large(self, scope: Scope) -> bool:
        declared = dict(scope.get("headers") or []).get(b"content-length")
        return declared is not None and declared.isdigit() and int(declared) > self.max_bytes

    async def _read(self, receive: Receive) -> list[Message] | None:
        """The request's body messages, read whole (it is small by definition), so that a
        chunked body over the limit is refused here with 413 rather than failing inside the
        route's parsing; ``None`` once it passes ``max_bytes``."""
        chunks: list[Message] = []
        size = 0
        while True:
            message = await receive()
            chunks.append(message)
            size += len(message.get("body", b""))
            if size > self.max_bytes:
                return None
            if message["type"] != "http.request" or not message.get("more_body", False):
                return chunks

    def _too_large(self) -> HTTPException:
        return too_large(
            f"the request body is over {self.max_bytes} bytes; large tool results belong in "
            "a store the tool shares with the agent, not in the thread"
        )
