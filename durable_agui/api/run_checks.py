"""Limits on what a run may carry, checked before anything reaches a thread.

Everything a run carries (its new user messages and answers) travels in a Temporal update,
and what a thread remembers of it travels in every continue-as-new input; Temporal refuses
payloads over about 2 MB. Every size a client controls in a run is bounded here (ids,
contents, counts, tools, answers), with a clear 413 or 422 and nothing stored. The raw
body's own checks (size, nesting, JSON) are ``body_check``'s.
"""

from __future__ import annotations

import functools
import json
import re
from typing import Any

from ag_ui.core import RunAgentInput, ToolMessage, UserMessage
from fastapi import HTTPException
from jsonschema import SchemaError
from jsonschema.validators import validator_for

from durable_agui.agents import AgentDefinition
from durable_agui.agents.definition import normal_tool_name
from durable_agui.api.errors import api_error
from durable_agui.api.run_input import content_json, transcript_tail
from durable_agui.core.contract import (
    MAX_INTERRUPT_ID,
    MAX_MESSAGE_ID,
    MAX_TOOL_CALL_ID,
    RUN_ID_PATTERN,
    ErrorType,
    ResumeAnswer,
    ToolResult,
)
from durable_agui.core.settings import Settings
from durable_agui.translation import ContentRefused, check_user_part

TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
"""Tool names every model provider accepts (the strictest common rule, e.g. Bedrock's)."""


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


def check_answer_bounds(
    results: list[ToolResult], resume: list[ResumeAnswer], settings: Settings
) -> None:
    """Refuse answers over their bounds: more answers than a run may carry messages
    (``max_messages_per_run``, 413), a result or resume payload over
    ``max_tool_result_bytes`` (413), an id over ``MAX_TOOL_CALL_ID`` / ``MAX_INTERRUPT_ID``
    (422)."""
    if len(results) + len(resume) > settings.max_messages_per_run:
        raise too_large(
            f"{len(results) + len(resume)} answers; a request may carry "
            f"{settings.max_messages_per_run}"
        )
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


def check_run_input(run_input: RunAgentInput, agent: AgentDefinition, settings: Settings) -> None:
    """Every check of an AG-UI run's input before the thread sees it, in the order a client
    meets them: counts and sizes, state and context, ids, user content, media, tools.

    Raises:
        HTTPException: the first check the input fails (413, 422).
    """
    check_counts(run_input, settings)
    check_state_and_context(run_input, settings)
    check_ids(run_input)
    check_user_content(run_input)
    check_media(run_input, settings)
    check_tools(run_input, agent)
