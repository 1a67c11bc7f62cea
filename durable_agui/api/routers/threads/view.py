"""``GET /threads/{threadId}`` and ``/messages``: what a thread is now, and its history."""

from __future__ import annotations

from durable_agui.api.auth import PrincipalDep
from durable_agui.api.deps import AgentsDep, SettingsDep, TemporalDep, ThreadIdDep
from durable_agui.api.errors import NO_THREAD, error_responses
from durable_agui.api.models import (
    ThreadMessages,
    ThreadView,
)
from durable_agui.api.routers.threads.base import threads_router
from durable_agui.client import thread_state
from durable_agui.core.contract import OpenInterrupt, workflow_id_for
from durable_agui.core.decision_links import THREAD_VIEW_DELIVERY, DecisionLink, links
from durable_agui.core.settings import Settings
from durable_agui.translation.transcript import workflow_ui_url

router = threads_router()


@router.get("/{threadId}", response_model=ThreadView, responses=error_responses(NO_THREAD))
async def get_thread(
    thread_id: ThreadIdDep,
    client: TemporalDep,
    settings: SettingsDep,
    principal: PrincipalDep,
    agents: AgentsDep,
) -> ThreadView:
    """The thread's status (``idle``, ``running``, ``awaiting_tool_results``,
    ``awaiting_approval``), its pending frontend calls, its open approval interrupts and its
    shared state (``null`` while the session store is away)."""
    from durable_agui.api.history import shared_state  # loads the stores' drivers

    state = await thread_state(client, thread_id, principal)
    definition = agents.get(state.agent)
    shared = await shared_state(settings, state, definition.state if definition else None)
    workflow_id = workflow_id_for(thread_id, principal)
    return ThreadView.of(
        thread_id,
        state,
        shared,
        workflow_id,
        workflow_ui_url(settings, workflow_id),
        lambda interrupt: _decision_links(settings, thread_id, principal, interrupt),
    )


def _decision_links(
    settings: Settings, thread_id: str, owner: str, interrupt: OpenInterrupt
) -> dict[str, str] | None:
    """The waiting approval's decision links (``core.decision_links``, delivery
    ``thread-view``), when the server signs them."""
    key, base_url = settings.decision_link_key, settings.public_url
    if key is None or base_url is None or interrupt.resolution is not None:
        return None
    approval = DecisionLink(
        thread_id=thread_id,
        owner=owner,
        interrupt_id=interrupt.interrupt_id,
        tool_call_id=interrupt.wire_id,
        decision="deny",
        delivery=THREAD_VIEW_DELIVERY,
        expires_at=interrupt.expires_at,
    )
    return links(
        key.get_secret_value(),
        base_url,
        approval,
        interrupt.response_schema,
        args_shown=not interrupt.args_omitted,
    )


@router.get(
    "/{threadId}/messages",
    response_model=ThreadMessages,
    responses=error_responses(
        {
            **NO_THREAD,
            503: "The session store is away, or does not hold what the thread recorded.",
        }
    ),
)
async def get_messages(
    thread_id: ThreadIdDep, client: TemporalDep, settings: SettingsDep, principal: PrincipalDep
) -> ThreadMessages:
    """The persisted history as AG-UI messages; tool call ids are wire ids.

    503 ``SessionStoreInconsistent`` when the store does not hold what the thread recorded
    (a message missing or unreadable), rather than a history with a gap. While no run is
    in progress, only the messages the thread recorded are shown (a failed turn's partial
    messages are not history: the next turn cuts them).
    """
    # Imported on first use: the session stores' drivers load with it (``history``).
    from durable_agui.api.history import thread_messages

    state = await thread_state(client, thread_id, principal)
    return ThreadMessages(thread_id=thread_id, messages=await thread_messages(settings, state))
