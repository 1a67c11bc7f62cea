"""A workflow of your own that decides a durable-agui thread's approval and answers it by
signal, through an external workflow handle (docs/concepts/answers.md).

Beside a running ``durable-agui dev`` (Temporal on 127.0.0.1:7233; elsewhere set
``TEMPORAL_ADDRESS``):

    .venv/bin/python examples/approval_process/approval_process.py THREAD_ID INTERRUPT_ID approve

It runs a worker for this workflow on its own task queue, starts the workflow and waits for
it: the thread then continues in a run whose id starts with ``signal-``.
"""

from __future__ import annotations

import asyncio
import os
import sys
import uuid
from datetime import timedelta

from temporalio import workflow
from temporalio.client import Client
from temporalio.worker import Worker

TASK_QUEUE = "my-approvals"


@workflow.defn
class ApprovalProcess:
    """Decide, then answer the thread: ``thread_workflow_id`` is ``agui-thread-<threadId>``
    (``GET /threads/{id}`` names it as ``workflowId``), ``interrupt_id`` the approval's id
    (``interrupts[].id`` there)."""

    @workflow.run
    async def run(self, thread_workflow_id: str, interrupt_id: str, approve: bool) -> None:
        # Your own steps go here: an activity that asks a manager, a timer, a signal back.
        await workflow.sleep(timedelta(seconds=1))
        decision = {"interruptId": interrupt_id, "status": "resolved" if approve else "cancelled"}
        thread = workflow.get_external_workflow_handle(thread_workflow_id)
        await thread.signal("approval_decisions", {"resume": [decision]})


async def main(thread_id: str, interrupt_id: str, approve: bool) -> None:
    client = await Client.connect(os.environ.get("TEMPORAL_ADDRESS", "127.0.0.1:7233"))
    async with Worker(client, task_queue=TASK_QUEUE, workflows=[ApprovalProcess]):
        await client.execute_workflow(
            ApprovalProcess.run,
            args=[f"agui-thread-{thread_id}", interrupt_id, approve],
            id=f"approval-{uuid.uuid4().hex[:8]}",
            task_queue=TASK_QUEUE,
        )


if __name__ == "__main__":  # the workflow sandbox imports this module again: start nothing then
    if len(sys.argv) != 4 or sys.argv[3] not in ("approve", "decline"):
        sys.exit("usage: approval_process.py THREAD_ID INTERRUPT_ID approve|decline")
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3] == "approve"))
    # Done: leave without the interpreter's teardown, during which the Temporal SDK's native
    # threads can abort the process (PyGILState_Release) after the work has succeeded.
    sys.stdout.flush()
    os._exit(0)
