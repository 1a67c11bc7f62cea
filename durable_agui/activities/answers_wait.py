"""A continuation's answers wait out a store outage; its turn does not wait for ever.

A continuation's ``run_turn`` writes the closed batch's answers before the turn runs
(one activity where there were two). Two rules meet there: an answer the thread accepted is written
however long the session store is away (as ``reconcile_session`` always did, retried without
limit), and a turn has ``TURN_ATTEMPTS`` attempts (``RUN_TURN_RETRY``), whatever ends them: a
worker that dies, or an attempt that times out, raises nothing an attempt could count. So
the turn keeps its three attempts, and its first attempt, when it finds the store away
before it wrote the answers, fails at once with ``AnswersWaitForTheStore``, not retried; the
thread then writes them with ``reconcile_session`` and runs the turn after it
(``RunSteps._continue``).

Only the first attempt: a later one follows an attempt that may have written the answers
and streamed part of the turn, which only a retry of the same activity closes (its
``turn_retried``, its next message ids). It retries as any turn does; a store still away
after the last attempt ends the run with ``SessionStoreUnavailable``, as a turn that lost
the store after ``reconcile_session`` did before the patch, and answers not yet written
stay recorded for the next run.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass

from temporalio import activity
from temporalio.exceptions import ApplicationError

from durable_agui.core.contract import ANSWERS_WAIT_FOR_THE_STORE, ErrorType, TurnInput


@dataclass
class AnswersPending:
    """Whether the turn still has answers to write (``answers_wait_for_the_store``)."""

    pending: bool

    def written(self) -> None:
        self.pending = False


@contextlib.contextmanager
def answers_wait_for_the_store(turn: TurnInput) -> Iterator[AnswersPending]:
    """Until ``turn`` wrote its answers (``AnswersPending.written``), the store being away
    (``SessionStoreUnavailable``) fails its first attempt as ``AnswersWaitForTheStore``, not
    retried (see the module).

    Raises:
        ApplicationError: ``AnswersWaitForTheStore``, from ``SessionStoreUnavailable``.
    """
    answers = AnswersPending(turn.answers is not None and activity.info().attempt == 1)
    try:
        yield answers
    except ApplicationError as err:
        if not answers.pending or err.type != ErrorType.SESSION_STORE_UNAVAILABLE:
            raise
        raise ApplicationError(
            str(err.message), type=ANSWERS_WAIT_FOR_THE_STORE, non_retryable=True
        ) from err
