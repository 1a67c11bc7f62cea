"""The verbs of the protocol, for a test: ``AgentTestClient``.

Runs are AG-UI runs (``POST /agents/{agent}``); answers, approvals and denials go through
the REST trigger (``POST /threads/{id}/tool-results``, the same rules as a ``role:tool``
message or a ``resume`` entry in a run: ``docs/concepts/answers.md``), and the run they
start is read from its ``eventsUrl``; time moves only when a test skips it (Temporal's
time-skipping test server).
"""

from __future__ import annotations

import asyncio
import html
import json
import re
import time
import uuid
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

import httpx
from temporalio.testing import WorkflowEnvironment

from durable_agui.core.contract import FrontendTool
from durable_agui.testing.errors import AgentApiError, NoRunStarted
from durable_agui.testing.results import RunResult, parse_sse

Interrupt = dict[str, Any] | str
"""An approval to answer: an entry of ``RunResult.interrupts``, or its ``id``."""

SETTLE_S = 30.0
"""How long (real time) ``skip_until_expired`` waits for the thread to close its expired
calls once their deadline has passed: a workflow task and an activity that writes the
results, which run in real time."""


def _checked(response: httpx.Response) -> httpx.Response:
    if response.status_code >= 400:
        try:
            body = response.json()
        except ValueError:
            body = {"detail": {"type": None, "message": response.text}}
        raise AgentApiError(response.status_code, body)
    return response


def _content(content: Any) -> Any:
    """A tool result's content as the API takes it: text or content parts as given, any
    other JSON value as its JSON text (``{"approved": true}`` -> ``'{"approved": true}'``),
    ``None`` as no content."""
    if content is None:
        return ""  # no content (an error alone, say): not the JSON text "null"
    return content if isinstance(content, str | list) else json.dumps(content)


OWNER = "owner"
"""The principal of the threads a test starts, when the environment has ``identities``."""


def identity_key(identity: str) -> str:
    """The API key the test environment gives ``identity``."""
    return f"test-key-{identity}"


class AgentTestClient:
    """Talks to one durable-agui app as a client does, on a time-skipping server.

    ``http``: an ``httpx.AsyncClient`` for the app (its base URL the API's root);
    ``temporal``: the ``WorkflowEnvironment`` the app's threads run on; ``agent``: the
    agent ``run`` talks to when it names none (``None``: it must name one).

    Every verb raises ``AgentApiError`` when the API answers with an error status.
    """

    def __init__(
        self, http: httpx.AsyncClient, temporal: WorkflowEnvironment, agent: str | None
    ) -> None:
        self.http = http
        self.temporal = temporal
        self.agent = agent

    async def run(
        self,
        thread_id: str,
        text: str,
        *,
        agent: str | None = None,
        tools: Sequence[FrontendTool] | None = None,
        state: dict[str, Any] | None = None,
    ) -> RunResult:
        """Send the user message ``text`` to ``thread_id`` (the thread starts on its first
        run) in an AG-UI run, with the frontend tools ``tools`` (default: those the agent
        declares its clients offer, ``AgentDefinition.frontend_tools``), and read the run to
        its end (``RUN_FINISHED`` or ``RUN_ERROR``).

        ``agent``: default ``self.agent``; ``state``: the run's ``state`` (default ``{}``:
        the thread keeps its own). The offline model reads ``text`` as its script.

        Raises:
            ValueError: no agent named and more than one served.
            AgentApiError: the run refused (404 unknown agent, 409, 422, ...).
        """
        run_id = f"run-{uuid.uuid4().hex[:12]}"
        chosen = self._agent(agent)
        declared = (
            [tool.model_dump(exclude_none=True) for tool in tools]
            if tools is not None
            else await self._offered_tools(chosen)
        )
        body = {
            "threadId": thread_id,
            "runId": run_id,
            "messages": [{"id": f"{run_id}-user", "role": "user", "content": text}],
            "tools": declared,
            "context": [],
            "state": state or {},
            "forwardedProps": {},
        }
        response = await self.http.post(f"/agents/{chosen}", json=body)
        return RunResult(thread_id, run_id, parse_sse(_checked(response).text))

    async def _offered_tools(self, agent: str) -> list[dict[str, Any]]:
        """The frontend tools ``agent`` declares its clients offer, as a run declares them."""
        listed = _checked(await self.http.get("/agents")).json()
        offered: list[dict[str, Any]] = next(
            (a["frontendTools"] for a in listed if a["name"] == agent), []
        )
        return [
            {key: tool[key] for key in ("name", "description", "parameters") if key in tool}
            for tool in offered
        ]

    def _agent(self, agent: str | None) -> str:
        chosen = agent or self.agent
        if chosen is None:
            raise ValueError("several agents are served: name one with agent=...")
        return chosen

    async def answer(
        self, thread_id: str, tool_call_id: str, content: Any, *, error: str | None = None
    ) -> RunResult:
        """Answer the frontend call ``tool_call_id`` (a wire id, as in
        ``RunResult.pending_tool_call_ids``) with ``content`` (text, AG-UI content parts, or
        any JSON value, sent as its JSON text); ``error``: the call failed, with this
        message. Returns the run the answer starts.

        Raises:
            NoRunStarted: other calls of the batch still wait.
            AgentApiError: 409 ``UnknownToolCall``, ``ToolCallExpired``,
                ``ConflictingToolResult``, ...
        """
        result: dict[str, Any] = {"toolCallId": tool_call_id, "content": _content(content)}
        if error is not None:
            result["error"] = error
        return await self._continue(thread_id, {"results": [result]})

    async def approve(
        self,
        thread_id: str,
        interrupt: Interrupt,
        payload: Any = None,
        *,
        as_: str | None = None,
        edits: dict[str, Any] | None = None,
    ) -> RunResult:
        """Approve ``interrupt`` (AG-UI resume status ``resolved``) with ``payload`` (what
        the approved tool reads as ``invocation_state["approval"]``; the interrupt's
        ``responseSchema`` describes it to a client, and the server does not check it).
        ``as_``: approve as this identity (one of the environment's ``identities``), by
        REST with its API key, as an approver who does not own the thread does; ``edits``:
        the corrected arguments the tool runs with (``payload.arguments``), for a policy
        that is ``editable``. Returns the run that runs the tool.

        Raises:
            NoRunStarted: other approvals (a quorum not met yet) or calls still wait.
            AgentApiError: 409 for an unknown, closed or differently answered interrupt;
                403 ``ApproverNotAllowed``; 404 for someone the policy does not name; 422
                ``InvalidEdits``; 413 for a payload over the batch's budget.
        """
        if edits is not None:
            payload = {**(payload or {}), "arguments": edits}
        entry = _resume(interrupt, "resolved", payload)
        return await self._continue(thread_id, {"resume": [entry]}, as_)

    async def deny(
        self, thread_id: str, interrupt: Interrupt, *, as_: str | None = None
    ) -> RunResult:
        """Deny ``interrupt`` (AG-UI resume status ``cancelled``): the tool does not run and
        the model reads that it was denied. ``as_``: as ``approve``. Returns the run that
        follows.

        Raises:
            NoRunStarted, AgentApiError: as ``approve``.
        """
        entry = _resume(interrupt, "cancelled")
        return await self._continue(thread_id, {"resume": [entry]}, as_)

    async def decide_by_link(
        self, thread_id: str, link: str, comment: str | None = None
    ) -> RunResult:
        """Press the button of decision link ``link`` (an entry of an interrupt's
        ``decisionLinks`` in ``thread``, or of a ``thread.waiting`` webhook body), with
        ``comment``, as a person on its page does (docs/guides/decision-links.md). Returns
        the run the decision starts. The environment needs ``decision_link_key`` and
        ``public_url="http://127.0.0.1"`` (the in-process app's address) to make links.

        Raises:
            NoRunStarted: other approvals or calls of the batch still wait.
            AgentApiError: the page's refusal (``status``; ``message`` is its heading:
                "This link was already used", "This link has expired", ...).
        """
        response = await self.http.post(link, data={"comment": comment or ""})
        heading = re.search(r"<h1>(.*?)</h1>", response.text)
        if response.status_code != 200:
            message = html.unescape(heading.group(1)) if heading else response.text
            raise AgentApiError(
                response.status_code, {"detail": {"type": None, "message": message}}
            )
        run = re.search(r'data-run-id="([^"]+)"', response.text)
        if run is None:
            raise NoRunStarted(thread_id, _waiting_ids(await self.thread(thread_id)))
        return await self.run_events(thread_id, html.unescape(run.group(1)))

    async def send_answers(
        self,
        thread_id: str,
        results: Sequence[dict[str, Any]] = (),
        resume: Sequence[dict[str, Any]] = (),
    ) -> dict[str, Any]:
        """Post answers as they are (``POST /threads/{id}/tool-results``: ``results`` of
        ``{"toolCallId", "content", "error"?}``, ``resume`` of ``{"interruptId", "status",
        "payload"?}``) and return the API's answer (``accepted``, ``acknowledged``,
        ``stillPending``, ``runId``, ``eventsUrl``) without reading a run: for answering a
        batch in parts.

        Raises:
            AgentApiError: as ``answer``.
        """
        return await self._send(thread_id, {"results": list(results), "resume": list(resume)})

    async def _send(
        self, thread_id: str, body: dict[str, Any], as_: str | None = None
    ) -> dict[str, Any]:
        """``POST /threads/{id}/tool-results``, as ``as_`` (its key, naming the owner)."""
        path = f"/threads/{thread_id}/tool-results"
        if as_ is None:
            response = await self.http.post(path, json=body)
        else:
            response = await self.http.post(
                path,
                json=body,
                params={"owner": OWNER},
                headers={"X-API-Key": identity_key(as_)},
            )
        answered: dict[str, Any] = _checked(response).json()
        return answered

    async def run_events(self, thread_id: str, run_id: str) -> RunResult:
        """Run ``run_id`` of ``thread_id`` from its first event to its end
        (``GET /threads/{id}/runs/{runId}/events``), however long ago it started.

        Raises:
            AgentApiError: 404 no such thread or run.
        """
        response = await self.http.get(f"/threads/{thread_id}/runs/{run_id}/events")
        return RunResult(thread_id, run_id, parse_sse(_checked(response).text))

    async def _continue(
        self, thread_id: str, body: dict[str, Any], as_: str | None = None
    ) -> RunResult:
        answered = await self._send(thread_id, {"results": [], "resume": [], **body}, as_)
        if answered["runId"] is None:
            raise NoRunStarted(thread_id, answered["stillPending"])
        return await self.run_events(thread_id, answered["runId"])

    async def thread(self, thread_id: str) -> dict[str, Any]:
        """What the thread is now: the ``GET /threads/{id}`` body (``status``:
        ``idle``, ``running``, ``awaiting_tool_results`` or ``awaiting_approval``;
        ``pendingToolCalls`` and ``interrupts`` with their ``expiresAt``; ``state``).

        Raises:
            AgentApiError: 404 ``ThreadNotFound``.
        """
        view: dict[str, Any] = _checked(await self.http.get(f"/threads/{thread_id}")).json()
        return view

    async def messages(self, thread_id: str) -> list[dict[str, Any]]:
        """The thread's history as AG-UI messages (``GET /threads/{id}/messages``): user,
        assistant (with ``toolCalls``) and ``role:"tool"`` messages, tool call ids as wire
        ids.

        Raises:
            AgentApiError: 404 ``ThreadNotFound``, 503 when the store is away.
        """
        response = await self.http.get(f"/threads/{thread_id}/messages")
        messages: list[dict[str, Any]] = _checked(response).json()["messages"]
        return messages

    async def decisions(self, thread_id: str) -> list[dict[str, Any]]:
        """Every decision on the thread's approvals, oldest first (``GET
        /threads/{id}/decisions``: ``decision``, ``approver``, ``channel``, ``step``...).

        Raises:
            AgentApiError: 404 ``ThreadNotFound``.
        """
        response = await self.http.get(f"/threads/{thread_id}/decisions")
        decisions: list[dict[str, Any]] = _checked(response).json()["decisions"]
        return decisions

    async def skip_to_next_step(self, thread_id: str, interrupt: Interrupt) -> dict[str, Any]:
        """Skip past the deadline of ``interrupt``'s current step, then wait (real time, at
        most ``SETTLE_S``) until the thread took its deadline's action: the approval asked
        at its next step (``escalate``), or decided (``deny``, ``approve``). Returns the
        thread as ``thread`` does, then.

        Raises:
            ValueError: the thread does not wait on ``interrupt``.
            TimeoutError: nothing changed ``SETTLE_S`` after the deadline.
        """
        interrupt_id = interrupt if isinstance(interrupt, str) else interrupt["id"]
        view = await self.thread(thread_id)
        waiting = next((i for i in view["interrupts"] if i["id"] == interrupt_id), None)
        if waiting is None or waiting["answered"]:
            raise ValueError(f"thread {thread_id!r} does not wait on {interrupt_id!r}")
        deadline = datetime.fromisoformat(waiting["expiresAt"])
        await self.skip(deadline - await self.now() + timedelta(seconds=1))
        settle_until = time.monotonic() + SETTLE_S
        while time.monotonic() < settle_until:
            view = await self.thread(thread_id)
            now = next((i for i in view["interrupts"] if i["id"] == interrupt_id), None)
            if now is None or now["expiresAt"] != waiting["expiresAt"] or now["answered"]:
                return view
            await asyncio.sleep(0.01)
        raise TimeoutError(f"thread {thread_id!r} did not act on {interrupt_id!r}'s deadline")

    async def now(self) -> datetime:
        """The test server's clock (UTC): real time plus every skip so far."""
        return await self.temporal.get_current_time()

    async def skip(self, duration: timedelta) -> None:
        """Move the test server's clock ``duration`` ahead, firing every durable timer due
        meanwhile (answer deadlines, time-to-live, schedules) in order. Activities (the
        model's turns, the store's writes) still take real time."""
        await self.temporal.sleep(duration)

    async def skip_until_expired(self, thread_id: str) -> dict[str, Any]:
        """Skip past the last deadline of the calls and approvals ``thread_id`` waits on
        (their ``expiresAt``: ``Settings.answer_timeout_s`` after the run that made them,
        24 h by default), then wait (real time, at most ``SETTLE_S``) until the thread has
        closed them. Returns the thread as ``thread`` does, then.

        Raises:
            ValueError: the thread waits on nothing.
            TimeoutError: the calls were still open ``SETTLE_S`` after their deadline.
        """
        waiting = _waiting(await self.thread(thread_id))
        if not waiting:
            raise ValueError(f"thread {thread_id!r} waits on no call or approval")
        deadline = max(waiting.values())
        await self.skip(deadline - await self.now() + timedelta(seconds=1))
        settle_until = time.monotonic() + SETTLE_S
        while time.monotonic() < settle_until:
            view = await self.thread(thread_id)
            if not waiting.keys() & _waiting(view).keys():
                return view
            await asyncio.sleep(0.01)
        raise TimeoutError(f"thread {thread_id!r} still waits on {sorted(waiting)}")


def _resume(interrupt: Interrupt, status: str, payload: Any = None) -> dict[str, Any]:
    interrupt_id = interrupt if isinstance(interrupt, str) else interrupt["id"]
    return {"interruptId": interrupt_id, "status": status, "payload": payload}


def _waiting(view: dict[str, Any]) -> dict[str, datetime]:
    """The unanswered calls and approvals of a thread view, id -> deadline."""
    open_items = [
        *((c["toolCallId"], c) for c in view["pendingToolCalls"]),
        *((i["id"], i) for i in view["interrupts"]),
    ]
    return {
        item_id: datetime.fromisoformat(item["expiresAt"])
        for item_id, item in open_items
        if not item["answered"]
    }


def _waiting_ids(view: dict[str, Any]) -> list[str]:
    return sorted(_waiting(view))
