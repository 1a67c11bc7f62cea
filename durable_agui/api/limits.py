"""Limits on what a request may carry, checked before anything reaches a thread.

Everything a run carries (its new user messages and answers) travels in a Temporal update,
and what a thread remembers of it travels in every continue-as-new input; Temporal refuses
payloads over about 2 MB. Every size a client controls is bounded here (ids, contents,
nesting, counts), with a clear 413 or 422 and nothing stored.
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Awaitable, Callable
from typing import Any

from ag_ui.core import RunAgentInput, ToolMessage, UserMessage
from fastapi import HTTPException, Request
from jsonschema import SchemaError
from jsonschema.validators import validator_for
from pydantic import ValidationError
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from durable_agui.agents import AgentDefinition
from durable_agui.agents.definition import normal_tool_name
from durable_agui.api.errors import api_error, error_response
from durable_agui.api.run_input import content_json, transcript_tail
from durable_agui.core.contract import (
    MAX_INTERRUPT_ID,
    MAX_MESSAGE_ID,
    MAX_TOOL_CALL_ID,
    MULTITASK_STRATEGIES,
    RUN_ID_PATTERN,
    ErrorType,
    MultitaskStrategy,
    ResumeAnswer,
    ThreadMetadata,
    ToolResult,
)
from durable_agui.core.settings import Settings
from durable_agui.translation import ContentRefused, check_user_part

TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
"""Tool names every model provider accepts (the strictest common rule, e.g. Bedrock's)."""

MAX_DEPTH = 32
"""Deepest JSON nesting a request body may have (tool schemas, content parts, metadata)."""


def too_large(message: str) -> HTTPException:
    return api_error(413, ErrorType.REQUEST_TOO_LARGE, message)


def invalid(error_type: ErrorType, message: str) -> HTTPException:
    return api_error(422, error_type, message)


def json_bytes(value: Any) -> int:
    """UTF-8 bytes of ``value`` as JSON: the measure of every size bound on client JSON."""
    return len(json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogatepass"))


def _shown(client_id: str) -> str:
    return repr(client_id if len(client_id) <= 80 else client_id[:77] + "...")


def check_counts(run_input: RunAgentInput, settings: Settings) -> None:
    """Refuse (413) a run with more messages or tools, or larger tool declarations, than
    the configured limits."""
    if len(run_input.messages) > settings.max_messages_per_run:
        raise too_large(
            f"{len(run_input.messages)} messages; a run may carry {settings.max_messages_per_run}"
        )
    tools = run_input.tools or []
    if len(tools) > settings.max_tools_per_run:
        raise too_large(f"{len(tools)} tools; a run may declare {settings.max_tools_per_run}")
    declared = json_bytes([tool.model_dump(mode="json") for tool in tools])
    if declared > settings.max_tools_bytes:
        raise too_large(
            f"the run's tools take {declared} bytes; a thread keeps at most "
            f"{settings.max_tools_bytes} of tool declarations"
        )


def check_state_and_context(run_input: RunAgentInput, settings: Settings) -> None:
    """Refuse a ``state`` that is not a JSON object (422 ``InvalidState``: it is merged into
    the thread's Strands agent state, a key/value store of non-blank keys), and a ``state`` or ``context``
    larger than ``max_state_bytes`` / ``max_context_bytes`` (413): both travel in the run's
    Temporal update and its turn's input. ``null`` or no ``state`` is no state."""
    _check_state(run_input.state, settings)
    context = [entry.model_dump(mode="json") for entry in run_input.context or []]
    if context and json_bytes(context) > settings.max_context_bytes:
        raise too_large(
            f"context takes {json_bytes(context)} bytes; a run may send "
            f"{settings.max_context_bytes}"
        )


def _check_state(state: Any, settings: Settings) -> None:
    if state is None:
        return
    if not isinstance(state, dict):
        raise invalid(
            ErrorType.INVALID_STATE,
            f"state must be a JSON object (or null), not {_json_kind(state)}",
        )
    if any(not key.strip() for key in state):
        raise invalid(ErrorType.INVALID_STATE, "state keys must not be empty or blank")
    if json_bytes(state) > settings.max_state_bytes:
        raise too_large(
            f"state takes {json_bytes(state)} bytes; a run may send {settings.max_state_bytes}"
        )


def _json_kind(value: Any) -> str:
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    return "a number" if isinstance(value, int | float) else type(value).__name__


def check_ids(run_input: RunAgentInput) -> None:
    """Refuse (422) ids a thread cannot take: a ``runId`` outside ``RUN_ID_PATTERN`` (it is
    a path segment of the run's events URL), message ids over ``MAX_MESSAGE_ID`` or used
    twice in one request, ``toolCallId`` and ``interruptId`` over their bounds."""
    if not RUN_ID_PATTERN.fullmatch(run_input.run_id):
        raise invalid(
            ErrorType.INVALID_RUN_ID,
            f"runId {_shown(run_input.run_id)} is not valid: use 1-128 characters from "
            "A-Z a-z 0-9 _ . : - starting with a letter or digit",
        )
    seen: set[str] = set()
    for message in run_input.messages:
        _check_message_id(message.id, seen)
        seen.add(message.id)
        if isinstance(message, ToolMessage):
            _check_tool_call_id(message.tool_call_id)
    for entry in run_input.resume or []:
        _check_interrupt_id(entry.interrupt_id)


def _check_message_id(message_id: str, seen: set[str]) -> None:
    if not message_id or len(message_id) > MAX_MESSAGE_ID:
        raise invalid(
            ErrorType.INVALID_MESSAGE_ID,
            f"message ids must have 1 to {MAX_MESSAGE_ID} characters",
        )
    if message_id in seen:
        raise invalid(
            ErrorType.DUPLICATE_MESSAGE_ID,
            f"message id {_shown(message_id)} is used by two messages of this run",
        )


def _check_tool_call_id(tool_call_id: str) -> None:
    if len(tool_call_id) > MAX_TOOL_CALL_ID:
        raise invalid(
            ErrorType.INVALID_TOOL_CALL_ID,
            f"toolCallId {_shown(tool_call_id)} is over {MAX_TOOL_CALL_ID} characters",
        )


def _check_interrupt_id(interrupt_id: str) -> None:
    if len(interrupt_id) > MAX_INTERRUPT_ID:
        raise invalid(
            ErrorType.INVALID_INTERRUPT_ID,
            f"interruptId {_shown(interrupt_id)} is over {MAX_INTERRUPT_ID} characters",
        )


def check_user_content(run_input: RunAgentInput) -> None:
    """Refuse (422, ``EmptyMessage``) a user message with nothing in it: ``""``, ``[]``, or
    only empty text parts. Model providers refuse an empty user turn (Bedrock), or the
    model would answer a message nobody wrote. Only the transcript's tail (after the last
    assistant message) is checked: it is all a thread reads (``run_request``)."""
    for message in transcript_tail(run_input.messages):
        if isinstance(message, UserMessage) and _is_empty(message.content):
            raise invalid(
                ErrorType.EMPTY_MESSAGE,
                f"user message {_shown(message.id)} has no content: send text or a content part",
            )


def _is_empty(content: str | list[Any]) -> bool:
    """Whether user content is ``""``, ``[]`` or only empty text parts."""
    parts = [content] if isinstance(content, str) else content
    return all(
        (part == "") if isinstance(part, str) else (getattr(part, "text", None) == "")
        for part in parts
    )


def check_media(run_input: RunAgentInput, settings: Settings) -> None:
    """Refuse a user content part no Strands block represents, or that the server may not
    fetch, naming its field (``messages[2].content[1].source``): 422 ``UnsupportedContent``
    or ``MediaUrlNotAllowed``, 413 ``MediaTooLarge`` over ``max_media_bytes``
    (``check_user_part``). Only the transcript's tail is checked, as in
    ``check_user_content``; the turn checks again."""
    start = len(run_input.messages) - len(transcript_tail(run_input.messages))
    for position, message in enumerate(run_input.messages[start:], start):
        if not isinstance(message, UserMessage) or isinstance(message.content, str):
            continue
        parts = content_json(message.content)
        for index, part in enumerate(parts if isinstance(parts, list) else []):
            try:
                check_user_part(
                    part,
                    f"messages[{position}].content[{index}]",
                    settings.max_media_bytes,
                    settings.media_fetch_hosts,
                )
            except ContentRefused as refused:
                raise api_error(refused.status, refused.error_type, refused.message) from None


def check_tools(run_input: RunAgentInput, agent: AgentDefinition) -> None:
    """Refuse (422, ``InvalidTool``) frontend tools a model provider cannot take: a name
    outside ``TOOL_NAME``, a name declared twice, the name of one of the agent's backend
    tools, or ``parameters`` that are not a JSON Schema object (checked against the
    schema's own meta-schema). Names are compared as Strands compares them, ``-`` and ``_``
    being the same (``normal_tool_name``): Strands refuses an agent with both."""
    # A factory's tools are known per turn only (run_turn gives them precedence).
    backend = {normal_tool_name(name): name for name in agent.tool_names or set()}
    declared: dict[str, str] = {}
    for tool in run_input.tools or []:
        normal = normal_tool_name(tool.name)
        if normal in declared:
            same = "" if declared[normal] == tool.name else f" (as {_shown(declared[normal])})"
            raise invalid(
                ErrorType.INVALID_TOOL, f"tool {_shown(tool.name)} is declared twice{same}"
            )
        declared[normal] = tool.name
        _check_tool_name(tool.name, backend.get(normal), agent.name)
        _check_tool_parameters(tool.name, tool.parameters)


def _check_tool_name(name: str, backend_name: str | None, agent_name: str) -> None:
    """``backend_name``: the agent's backend tool of the same normal name, if any."""
    if not TOOL_NAME.fullmatch(name):
        raise invalid(
            ErrorType.INVALID_TOOL,
            f"tool name {_shown(name)} is not valid: use 1-64 characters from A-Z a-z 0-9 _ -",
        )
    if backend_name is not None:
        raise invalid(
            ErrorType.INVALID_TOOL,
            f"tool {name!r} is a backend tool of agent {agent_name!r}"
            + ("" if backend_name == name else f" (as {backend_name!r})")
            + "; a frontend tool needs another name",
        )


def _check_tool_parameters(name: str, parameters: Any) -> None:
    """``parameters`` absent, or a JSON Schema object valid against its own meta-schema."""
    if parameters is None:
        return
    if not isinstance(parameters, dict):
        raise invalid(ErrorType.INVALID_TOOL, f"parameters of tool {name!r} must be a JSON object")
    problem = _schema_problem(json.dumps(parameters, sort_keys=True))
    if problem is not None:
        raise invalid(ErrorType.INVALID_TOOL, f"parameters of tool {name!r} {problem}")


@functools.lru_cache(maxsize=1024)
def _schema_problem(schema_json: str) -> str | None:
    """What is wrong with the JSON Schema ``schema_json`` (canonical JSON), ``None`` when
    it is valid against its own meta-schema. Cached: a client declares the same tools on
    every run, and checking a schema costs more than the rest of a run's checks."""
    parameters = json.loads(schema_json)
    try:
        validator_for(parameters).check_schema(parameters)
    except SchemaError as err:
        where = "/".join(str(part) for part in err.path) or "(top level)"
        return f"are not a valid JSON Schema at {where}: {err.message[:200]}"
    return None


def check_answers(
    results: list[ToolResult], resume: list[ResumeAnswer], settings: Settings
) -> None:
    """Refuse answers over their bounds: a result or resume payload over
    ``max_tool_result_bytes`` (413), an id over ``MAX_TOOL_CALL_ID`` / ``MAX_INTERRUPT_ID``
    (422)."""
    for result in results:
        _check_tool_call_id(result.tool_call_id)
        size = result.size()
        if size > settings.max_tool_result_bytes:
            raise too_large(
                f"the result for tool call {result.tool_call_id!r} is {size} bytes; the limit is "
                f"{settings.max_tool_result_bytes} (large results belong in a store the tool "
                "shares with the agent, not in the thread)"
            )
    for answer in resume:
        _check_interrupt_id(answer.interrupt_id)
        size = answer.size()
        if size > settings.max_tool_result_bytes:
            raise too_large(
                f"the resume payload for interrupt {answer.interrupt_id!r} is {size} bytes; "
                f"the limit is {settings.max_tool_result_bytes}"
            )


_JSON_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_BRACKET = re.compile(rb"[\[\]{}]")


def json_depth_over(body: bytes, limit: int) -> bool:
    """Whether the JSON text ``body`` nests deeper than ``limit`` (arrays and objects),
    found without parsing it (Python's parser recurses, and would fail on deep input)."""
    depth = 0
    for bracket in _BRACKET.finditer(_JSON_STRING.sub(b'""', body)):
        if bracket.group() in (b"[", b"{"):
            depth += 1
            if depth > limit:
                return True
        else:
            depth -= 1
    return False


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number (RFC 8259)")


def _finite_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise ValueError(f"{text[:40]} is beyond the range of a double")
    return value


def json_body_error(body: bytes) -> tuple[ErrorType, str] | None:
    """What is wrong with the JSON request body ``body``, as ``(type, message)``, or
    ``None``. Checks every field a client sends, keys included: nesting deeper than
    ``MAX_DEPTH`` (``TooDeep``), text that is not JSON or not UTF-8, ``NaN`` / ``Infinity``
    and numbers too large for a double such as ``1e999`` (``InvalidJson``; Python's
    parser takes them, RFC 8259 has no such numbers), and lone
    surrogates such as ``"\\ud800"`` (``InvalidText``: UTF-8 cannot encode them)."""
    if json_depth_over(body, MAX_DEPTH):
        return ErrorType.TOO_DEEP, f"the body nests JSON deeper than {MAX_DEPTH} levels"
    try:
        parsed = json.loads(body, parse_constant=_refuse_constant, parse_float=_finite_float)
    except ValueError as err:
        return ErrorType.INVALID_JSON, f"the body is not valid JSON: {str(err)[:200]}"
    try:
        json.dumps(parsed, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return (
            ErrorType.INVALID_TEXT,
            "the body holds text that is not valid Unicode (a lone surrogate)",
        )
    return None


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


def content_refusal(scope: Scope, body: bytes) -> HTTPException | None:
    """What is wrong with the request body ``body`` of the request in ``scope``, or
    ``None``: 415 for a body that is not JSON (``is_json_media_type``), 422 for JSON that
    ``json_body_error`` refuses. An empty body is for the route to judge."""
    if not body:
        return None
    content_types = [v for k, v in scope["headers"] if k.lower() == b"content-type"]
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


MULTITASK_KEY = "multitaskStrategy"
"""The ``RunAgentInput.forwardedProps`` key naming a run's ``MultitaskStrategy``."""


def multitask_strategy(run_input: RunAgentInput, definition: AgentDefinition) -> MultitaskStrategy:
    """The run's strategy for a thread that is busy: ``forwardedProps.multitaskStrategy``,
    else the agent's (``AgentDefinition.multitask_strategy``).

    Raises:
        HTTPException: 422 ``InvalidRequest`` naming the field, for a value that is not one
            of ``MULTITASK_STRATEGIES``.
    """
    props = run_input.forwarded_props
    chosen = props.get(MULTITASK_KEY) if isinstance(props, dict) else None
    if chosen is None:
        return definition.multitask_strategy
    if chosen not in MULTITASK_STRATEGIES:
        raise invalid(
            ErrorType.INVALID_REQUEST,
            f"forwardedProps.{MULTITASK_KEY} must be one of {', '.join(MULTITASK_STRATEGIES)}; "
            f"got {json.dumps(chosen)[:60]}",
        )
    strategy: MultitaskStrategy = chosen
    return strategy


METADATA_KEY = "threadMetadata"
"""The ``RunAgentInput.forwardedProps`` key with the thread's title and tags."""


def thread_metadata(run_input: RunAgentInput) -> ThreadMetadata | None:
    """``forwardedProps.threadMetadata`` (``{"title", "tags"}``), when the run sends it.

    Raises:
        HTTPException: 422 ``InvalidRequest`` naming the field that does not fit.
    """
    props = run_input.forwarded_props
    given = props.get(METADATA_KEY) if isinstance(props, dict) else None
    if given is None:
        return None
    try:
        return ThreadMetadata.model_validate(given)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise invalid(
            ErrorType.INVALID_REQUEST,
            f"forwardedProps.{METADATA_KEY}{'.' + where if where else ''}: {first['msg']}",
        ) from None
