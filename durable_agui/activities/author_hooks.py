"""What the author's hooks see of calls the turn hands over, and when: never a placeholder.

Strands fires ``BeforeToolCallEvent`` and ``AfterToolCallEvent`` around every tool its
executor runs (``strands/tools/executors/_executor.py``), the stand-ins of frontend and
approval calls (``HandOverTool``) included, whose result is the placeholder. So:

- the author's hooks are registered through ``screened``: their tool-call callbacks skip
  an event whose ``selected_tool`` is a stand-in (Strands' other hooks, the session
  manager's and the conversation manager's, are registered by Strands and see all);
- an approved call runs in the thread's agent through ``run_with_hooks``: both events,
  the real tool in ``selected_tool`` and its real result in ``AfterToolCallEvent``, at the
  start of the turn that follows the person's decision;
- a result that came from elsewhere (a client's answer, a declined approval, a call the
  thread closed with an error) reaches ``AfterToolCallEvent`` at the start of the first turn
  that reads it (``tell_arrived_results``), with ``selected_tool=None`` (no tool ran here)
  and no ``BeforeToolCallEvent`` (it cannot be stopped: it has happened). Such an event is
  read only: a change of its ``result`` is not stored.

A hook that raises on such a call does not fail the turn: the thread would run the call (or
tell the result) again at every turn, and stop answering (ours: "never a thread that stops
answering"). Raised before an approved call, the call is not run and its result is the error
``HOOK_FAILED``; raised after it, the tool's result stands; raised on a result that arrived,
nothing changes. Each is logged with its traceback.
"""

from __future__ import annotations

import copy
import functools
import inspect
import logging
import time
from collections.abc import Callable, Collection, Iterator
from typing import Any

from strands import Agent
from strands.hooks import AfterToolCallEvent, BeforeToolCallEvent, HookProvider, HookRegistry
from strands.types.content import Message
from strands.types.tools import AgentTool, ToolResult, ToolUse

from durable_agui.activities.turn_parts import ApprovalGate, HandOverTool, run_tool
from durable_agui.translation import is_placeholder

logger = logging.getLogger(__name__)

HOOK_DECLINED = "A hook cancelled this tool call; it was not run."
"""The error result of an approved call that a ``BeforeToolCallEvent`` hook cancelled (or
interrupted: Strands' interrupts are not how this thread asks a person)."""
HOOK_FAILED = "A hook failed before this tool call ({failed}); it was not run."
"""The error result of an approved call whose ``BeforeToolCallEvent`` hook raised."""


def hides(event: Any) -> bool:
    """Whether ``event`` is a run of a stand-in, which the author's hooks do not see: a
    placeholder's, or a gate's that hands its call over."""
    if not isinstance(event, BeforeToolCallEvent | AfterToolCallEvent):
        return False
    tool = event.selected_tool
    if isinstance(tool, ApprovalGate):
        return tool.hands_over(event.tool_use)
    return isinstance(tool, HandOverTool)


def screened_callback(callback: Any) -> Any:
    """``callback`` skipping what ``hides``; sync or async as it is, with its type hints
    (``functools.wraps``), so Strands still infers the event type from them."""
    if inspect.iscoroutinefunction(callback):

        @functools.wraps(callback)
        async def screened_async(event: Any) -> None:
            if not hides(event):
                await callback(event)

        return screened_async

    @functools.wraps(callback)
    def screened_sync(event: Any) -> None:
        if not hides(event):
            callback(event)

    return screened_sync


class _ScreenedRegistry(HookRegistry):
    """What an author's ``register_hooks`` is given: it adds screened callbacks to the
    agent's registry (``add_hook`` goes through ``add_callback``, so nested providers too)."""

    def __init__(self, registry: HookRegistry) -> None:
        super().__init__()
        self._registry = registry

    def add_callback(self, event_type: Any, callback: Any, **kwargs: Any) -> None:
        self._registry.add_callback(event_type, screened_callback(callback), **kwargs)


class Screened(HookProvider):
    """An author's hook provider whose tool-call callbacks skip the stand-ins' runs."""

    def __init__(self, provider: HookProvider) -> None:
        self.provider = provider

    def register_hooks(self, registry: HookRegistry, **kwargs: Any) -> None:
        self.provider.register_hooks(_ScreenedRegistry(registry), **kwargs)


def screened(hooks: Collection[Any]) -> list[Any]:
    """The author's hooks (providers or plain callbacks, as ``Agent(hooks=...)`` takes them)
    screened; anything else is left for Strands to refuse."""
    return [
        Screened(hook)
        if isinstance(hook, HookProvider)
        else screened_callback(hook)
        if callable(hook)
        else hook
        for hook in hooks
    ]


async def run_with_hooks(
    agent: Agent,
    tool: AgentTool,
    tool_use: ToolUse,
    state: dict[str, Any],
    on_stream: Callable[[dict[str, Any]], None] | None = None,
) -> ToolResult:
    """Run an approved call as Strands' executor runs a tool: ``BeforeToolCallEvent`` (a
    hook may swap the tool, change the input or cancel), the tool, ``AfterToolCallEvent``
    with its result (a hook may rewrite it, or ask for another try). Returns the result
    the hooks leave, which is what is stored (a hook that raises: see the module).
    ``on_stream``: as ``run_tool`` takes it."""
    while True:
        try:
            before, interrupts = await agent.hooks.invoke_callbacks_async(
                BeforeToolCallEvent(
                    agent=agent, selected_tool=tool, tool_use=tool_use, invocation_state=state
                )
            )
        except Exception as failed:
            logger.warning("a hook failed before approved call %s", tool_use["name"], exc_info=True)
            return _error_result(tool_use, HOOK_FAILED.format(failed=_named(failed)))
        if interrupts or before.cancel_tool or before.selected_tool is None:
            return await _cancelled(agent, before)
        started = time.monotonic()
        result = await run_tool(before.selected_tool, before.tool_use, state, on_stream)
        try:
            after, _ = await agent.hooks.invoke_callbacks_async(
                AfterToolCallEvent(
                    agent=agent,
                    selected_tool=before.selected_tool,
                    tool_use=before.tool_use,
                    invocation_state=state,
                    result=result,
                    duration=time.monotonic() - started,
                )
            )
        except Exception:
            logger.warning("a hook failed after approved call %s", tool_use["name"], exc_info=True)
            return result
        if not after.retry:
            return after.result


def _named(failed: BaseException) -> str:
    return f"{type(failed).__name__}: {failed}"[:300]


def _error_result(tool_use: ToolUse, text: str) -> ToolResult:
    return {"toolUseId": tool_use["toolUseId"], "status": "error", "content": [{"text": text}]}


async def _cancelled(agent: Agent, before: BeforeToolCallEvent) -> ToolResult:
    """The error result of a call a hook cancelled, told to ``AfterToolCallEvent`` as
    Strands tells it (``selected_tool=None``, ``cancel_message``)."""
    message = before.cancel_tool if isinstance(before.cancel_tool, str) else HOOK_DECLINED
    result = _error_result(before.tool_use, message)
    try:
        after, _ = await agent.hooks.invoke_callbacks_async(
            AfterToolCallEvent(
                agent=agent,
                selected_tool=None,
                tool_use=before.tool_use,
                invocation_state=before.invocation_state,
                result=result,
                cancel_message=message,
            )
        )
    except Exception:
        logger.warning(
            "a hook failed after cancelled call %s", before.tool_use["name"], exc_info=True
        )
        return result
    return after.result


def arrived_results(
    messages: list[Message], ran_here: Callable[[ToolUse], bool], skipped: Collection[str]
) -> Iterator[tuple[ToolUse, ToolResult]]:
    """The results the turn reads first that no tool of this turn's agent produced: the
    tool results that end the history (a user message after the model's tool calls), for
    calls not ``ran_here`` and whose id is not in ``skipped``, that are not a
    placeholder."""
    uses = _last_tool_uses(messages)
    for block in messages[-1]["content"] if uses else []:
        result = block.get("toolResult")
        use = uses.get(result["toolUseId"]) if result else None
        if use is None or result is None or is_placeholder(result):
            continue
        if not ran_here(use) and use["toolUseId"] not in skipped:
            yield use, result


def _last_tool_uses(messages: list[Message]) -> dict[str, ToolUse]:
    """The tool calls of the model's last message, by id, when a user message (their
    results) ends the history; else none."""
    if len(messages) < 2 or (messages[-2]["role"], messages[-1]["role"]) != ("assistant", "user"):
        return {}
    return {
        block["toolUse"]["toolUseId"]: block["toolUse"]
        for block in messages[-2]["content"]
        if "toolUse" in block
    }


async def tell_arrived_results(
    agent: Agent,
    ran_here: Callable[[ToolUse], bool],
    skipped: Collection[str],
    state: dict[str, Any],
) -> None:
    """``AfterToolCallEvent`` for each of ``arrived_results`` (read only: ``selected_tool``
    is ``None``, a change of ``result`` is not stored)."""
    for use, result in arrived_results(agent.messages, ran_here, skipped):
        try:
            await agent.hooks.invoke_callbacks_async(
                AfterToolCallEvent(
                    agent=agent,
                    selected_tool=None,
                    tool_use=use,
                    invocation_state={**state, "agent": agent},
                    result=copy.deepcopy(result),  # the stored result stays as it is
                )
            )
        except Exception:
            logger.warning("a hook failed on the result of %s", use["name"], exc_info=True)
