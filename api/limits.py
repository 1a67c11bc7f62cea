"""Limits on what a request may carry, checked before anything reaches a thread.

Everything a run carries (its new user messages and answers) travels in a Temporal update,
and Temporal refuses payloads over about 2 MB; the limits here keep requests well inside
that, with clear errors instead of a failed workflow task.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ag_ui.core import RunAgentInput
from fastapi import HTTPException
from pydantic import BaseModel
from pydantic_core import PydanticSerializationError
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from agents import AgentDefinition
from durable_agui.contract import ResumeAnswer, ToolResult
from durable_agui.settings import Settings

TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
"""Tool names every model provider accepts (the strictest common rule, e.g. Bedrock's)."""

MAX_RUN_ID = 256


def unprocessable(error_type: str, message: str) -> HTTPException:
    return HTTPException(status_code=422, detail={"type": error_type, "message": message})


def too_large(message: str) -> HTTPException:
    return HTTPException(status_code=413, detail={"type": "RequestTooLarge", "message": message})


def check_counts(run_input: RunAgentInput, settings: Settings) -> None:
    """Refuse (413) a run with more messages or tools than the configured limits."""
    if len(run_input.messages) > settings.max_messages_per_run:
        raise too_large(
            f"{len(run_input.messages)} messages; a run may carry {settings.max_messages_per_run}"
        )
    if len(run_input.tools or []) > settings.max_tools_per_run:
        raise too_large(
            f"{len(run_input.tools or [])} tools; a run may declare {settings.max_tools_per_run}"
        )


def check_tool_results(
    results: list[ToolResult], settings: Settings, resume: list[ResumeAnswer] | None = None
) -> None:
    """Refuse (413) a tool result or resume payload over ``max_tool_result_bytes``."""
    check_json([result.content for result in results])
    for answer in resume or []:
        check_json(answer.payload)
        size = len(json.dumps(answer.payload, ensure_ascii=False).encode("utf-8", "surrogatepass"))
        if size > settings.max_tool_result_bytes:
            raise too_large(
                f"the resume payload for interrupt {answer.interrupt_id!r} is {size} bytes; "
                f"the limit is {settings.max_tool_result_bytes}"
            )
    for result in results:
        size = len(
            json.dumps([result.content, result.error], ensure_ascii=False).encode(
                "utf-8", "surrogatepass"
            )
        )
        if size > settings.max_tool_result_bytes:
            raise too_large(
                f"the result for tool call {result.tool_call_id!r} is {size} bytes; the limit is "
                f"{settings.max_tool_result_bytes} (large results belong in a store the tool "
                "shares with the agent, not in the thread)"
            )


MAX_DEPTH = 32
"""Deepest JSON nesting a request may carry (tool schemas, resume payloads, content)."""


def _depth(value: Any, limit: int) -> int:
    stack = [(value, 1)]
    deepest = 0
    while stack:
        item, depth = stack.pop()
        deepest = max(deepest, depth)
        if depth > limit:
            return depth
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item)
    return deepest


def check_json(*values: Any) -> None:
    """Refuse (422) free-form JSON that would not survive a round trip through Temporal and
    a model provider: nesting deeper than ``MAX_DEPTH`` (``TooDeep``), ``NaN`` or
    ``Infinity`` (``InvalidJson``; RFC 8259 has no such numbers, though Python's parser
    takes them), and lone surrogates anywhere, keys included (``InvalidText``)."""
    for value in values:
        if _depth(value, MAX_DEPTH) > MAX_DEPTH:
            raise unprocessable("TooDeep", f"JSON nested deeper than {MAX_DEPTH} levels")
        try:
            json.dumps(value, allow_nan=False, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError as err:
            raise unprocessable(
                "InvalidText", "the request holds text that is not valid Unicode (a lone surrogate)"
            ) from err
        except ValueError as err:
            raise unprocessable(
                "InvalidJson", "the request holds NaN or Infinity, which JSON does not allow"
            ) from err


def check_run_input(run_input: RunAgentInput, agent: AgentDefinition) -> None:
    """Refuse (422) a run whose ids or tools a thread or a model provider cannot take."""
    check_json(
        [tool.parameters for tool in run_input.tools or []],
        [entry.payload for entry in run_input.resume or []],
        run_input.state,
        run_input.forwarded_props,
    )
    if not run_input.run_id or len(run_input.run_id) > MAX_RUN_ID:
        raise unprocessable("InvalidRunId", f"runId must have 1 to {MAX_RUN_ID} characters")
    backend = {getattr(tool, "tool_name", None) for tool in agent.tools}
    for tool in run_input.tools or []:
        if not TOOL_NAME.fullmatch(tool.name):
            raise unprocessable(
                "InvalidTool",
                f"tool name {tool.name!r} is not valid: use 1-64 characters from A-Z a-z 0-9 _ -",
            )
        if tool.name in backend:
            raise unprocessable(
                "InvalidTool",
                f"tool {tool.name!r} is a backend tool of agent {agent.name!r}; "
                "a frontend tool needs another name",
            )
        if tool.parameters is not None and not isinstance(tool.parameters, dict):
            raise unprocessable(
                "InvalidTool", f"parameters of tool {tool.name!r} must be a JSON object"
            )


def check_encodable(model: BaseModel) -> None:
    """Refuse (422) text that cannot be encoded as UTF-8 (lone surrogates such as \\ud800)."""
    try:
        model.model_dump_json()
    except (PydanticSerializationError, UnicodeEncodeError) as err:
        raise unprocessable(
            "InvalidText", "the request holds text that is not valid Unicode (a lone surrogate)"
        ) from err


class BodySizeLimit:
    """ASGI middleware: 413 for a request body over ``max_bytes`` (declared or streamed)."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            await self._refuse(send)
            return
        # Read the whole body first (it is small by definition), so a chunked body over the
        # limit is refused here with 413 rather than failing inside the route's parsing.
        chunks: list[Message] = []
        received = 0
        while True:
            message = await receive()
            chunks.append(message)
            received += len(message.get("body", b""))
            if received > self.max_bytes:
                await self._refuse(send)
                return
            if message["type"] != "http.request" or not message.get("more_body", False):
                break
        replay = iter(chunks)

        async def replayed() -> Message:
            return next(replay, None) or await receive()

        await self.app(scope, replayed, send)

    async def _refuse(self, send: Send) -> None:
        body: dict[str, Any] = {
            "detail": {
                "type": "RequestTooLarge",
                "message": f"the request body is over {self.max_bytes} bytes; large tool "
                "results belong in a store the tool shares with the agent, not in the thread",
            }
        }
        await send(
            {
                "type": "http.response.start",
                "status": 413,
                "headers": [(b"content-type", b"application/json")],
            }
        )
        await send(
            {"type": "http.response.body", "body": json.dumps(body, separators=(",", ":")).encode()}
        )
