"""One Temporal worker for the project's workflow and activity and for durable-agui's
threads, on the task queue the API sends threads to (``DURABLE_AGUI_TASK_QUEUE``), and one
per agent on that agent's own task queue (its turns).

    python worker.py
"""

from __future__ import annotations

import asyncio

from durable_agui import Settings, agent_workers, connect, thread_activities, thread_workflows
from temporalio.worker import UnsandboxedWorkflowRunner, Worker

from activities import send_reminder
from agents import AGENTS
from workflows import ReminderWorkflow


async def main() -> None:
    settings = Settings()  # DURABLE_AGUI_* from the environment
    client = await connect(settings)  # durable-agui's data converter, for both
    worker = Worker(
        client,
        task_queue=settings.task_queue,
        workflows=[ReminderWorkflow, *thread_workflows()],
        # The definitions themselves (an import path such as "agents" works too).
        activities=[send_reminder, *thread_activities(settings, AGENTS)],
        # As durable-agui's own workers: the thread workflow does no I/O, and the sandbox
        # costs about a third of a turn's latency. Keep it if your own workflows want it.
        workflow_runner=UnsandboxedWorkflowRunner(),
    )
    agents = agent_workers(client, settings, agents=AGENTS)
    print(f"worker: serving task queue {settings.task_queue!r}", flush=True)
    await asyncio.gather(worker.run(), *(agent.run() for agent in agents))


if __name__ == "__main__":
    asyncio.run(main())
