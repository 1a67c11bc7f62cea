"""``AgentThreadWorkflow``: one AG-UI thread as a durable state machine (``workflow``),
with the rules it follows in plain modules of their own, each testable without a server:

- ``admission``: which runs, answers, cancels and deletions a thread takes (the updates'
  validators);
- ``run_queue``: the run queue and double texting (LangGraph's multitask strategies);
- ``rewind``: regenerate, edit and rollback (where the session goes back to);
- ``lifecycle``: idle time-to-live and continue-as-new;
- ``notifications``: what the webhooks say when a run ends;
- ``durable_agui.workflows.batch``: the answers of an open batch of calls.

The Temporal side (activities, timers, the event log) is ``workflow``, ``events`` and
``runs``.
"""

# Only the workflow's module, which imports the rest passed through the sandbox: anything
# imported here would be imported again inside it (and its pydantic models with it).
from durable_agui.workflows.thread.workflow import (
    KEEP_MESSAGE_IDS,
    KEEP_RUN_EVENTS,
    MAX_BATCH_ANSWER_BYTES,
    AgentThreadWorkflow,
)

__all__ = ["KEEP_MESSAGE_IDS", "KEEP_RUN_EVENTS", "MAX_BATCH_ANSWER_BYTES", "AgentThreadWorkflow"]
