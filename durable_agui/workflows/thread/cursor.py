"""Where the thread stands in its session, as its carry records it: the session's message
count, the run whose turn last completed, where each recent prompt and turn end sit (for
regenerate, edit and rollback), the user messages taken in, and the closed batch's results
and approved calls still to be written or run (the *tail*).

``SessionCursor`` is the one writer of those fields of ``ThreadCarry`` (``message_count``,
``last_turn_run_id``, ``prompt_indexes``, ``turn_end_counts``, ``taken_message_digests``,
``tail``, ``tail_anchor``, ``approved``). Where a regenerate goes back to is ``rewind``'s to
say (its rules: AG-UI 1.0 "Messages snapshot", LangGraph's ``rollback``); this moves the
cursor there. Pure: no ``temporalio.workflow``.
"""

from __future__ import annotations

from durable_agui.core.contract import (
    RECENT_RUNS,
    ApprovedCall,
    NativeToolResult,
    RunRequest,
    ThreadCarry,
    UserInput,
)
from durable_agui.workflows.bounds import recent


class SessionCursor:
    """The session position of ``carry`` (the one it writes)."""

    def __init__(self, carry: ThreadCarry) -> None:
        self._carry = carry

    @property
    def message_count(self) -> int | None:
        """Messages the session holds (``None``: not counted yet, before the first turn)."""
        return self._carry.message_count

    @property
    def last_turn_run_id(self) -> str | None:
        return self._carry.last_turn_run_id

    @property
    def tail(self) -> list[NativeToolResult]:
        return self._carry.tail

    @property
    def tail_anchor(self) -> str | None:
        return self._carry.tail_anchor

    @property
    def approved(self) -> list[ApprovedCall]:
        return self._carry.approved

    def counted(self, message_count: int) -> None:
        """The session's count before the thread's first turn (a session may predate it)."""
        self._carry.message_count = message_count

    def take_in(self, request: RunRequest, rewind_to: int | None) -> list[UserInput]:
        """The run's user messages the thread has not taken in yet (all of its one message
        for a regenerate or an edit, ``rewind_to``), now taken in."""
        if rewind_to is not None:
            fresh = request.user_messages
        else:
            taken = self._carry.taken_message_digests
            fresh = [m for m in request.user_messages if m.id_digest() not in taken]
        self._carry.taken_message_digests.update((m.id_digest(), m.digest()) for m in fresh)
        return fresh

    def forget(self, run: RunRequest) -> None:
        """The run's user messages were not taken in after all (its turn failed or never
        ran): the client may send them again under the same ids."""
        for user_message in run.user_messages:
            self._carry.taken_message_digests.pop(user_message.id_digest(), None)

    def closed(
        self, results: list[NativeToolResult], approved: list[ApprovedCall], anchor: str | None
    ) -> None:
        """A closed batch's results join the tail (written after the message of native id
        ``anchor``, when given), its approved calls the list the next turn runs."""
        self._carry.tail.extend(results)
        self._carry.approved.extend(approved)
        if anchor is not None:
            self._carry.tail_anchor = anchor

    def tail_written(self) -> None:
        """The tail is in the session now."""
        self._carry.tail = []

    def record_prompts(self, user_messages: list[UserInput]) -> None:
        """Where a turn stores its user messages (its starting count): a later edit of one
        goes back there."""
        count = self._carry.message_count
        if count is not None:
            self._carry.prompt_indexes.update((m.id_digest(), count) for m in user_messages)

    def turn_ended(self, run_id: str, message_count: int) -> None:
        """Run ``run_id``'s turn completed with the session at ``message_count``: what it ran
        (the tail's approved calls) is done, and a later regenerate of its answer goes back
        there."""
        carry = self._carry
        carry.approved = []
        carry.tail_anchor = None
        carry.last_turn_run_id = run_id
        carry.message_count = message_count
        carry.turn_end_counts = recent(
            {**carry.turn_end_counts, run_id: message_count}, RECENT_RUNS
        )

    def go_back(self, point: int) -> None:
        """Take the thread back to session index ``point`` (a regenerate or an edit; its open
        batch already closed): the next turn cuts the session there, and results and
        approvals waiting to be written go."""
        carry = self._carry
        carry.message_count = point
        carry.last_turn_run_id = next(
            (r for r, end in reversed(carry.turn_end_counts.items()) if end == point), None
        )
        self._drop_tail()

    def roll_back(
        self, run: RunRequest, message_count: int | None, last_turn_run_id: str | None
    ) -> None:
        """Forget the turn ``run`` cut short (``rollback``): the count goes back to where the
        run started, so the next turn cuts the session there (its messages, and the state
        they carried, leave the session); the closed calls' results go with them, and the
        run's user messages may be sent again."""
        self._carry.message_count = message_count
        self._carry.last_turn_run_id = last_turn_run_id
        self._drop_tail()
        self.forget(run)

    def _drop_tail(self) -> None:
        self._carry.tail, self._carry.tail_anchor, self._carry.approved = [], None, []
