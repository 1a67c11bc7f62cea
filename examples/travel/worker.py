"""One Temporal worker for the project's workflow and activity and for durable-agui's
threads, on the task queue the API sends threads to (``DURABLE_AGUI_TASK_QUEUE``).

    python worker.py
"""

from __future__ import annotations

import asyncio

from durable_agui import Settings, connect, load_agents, thread_activities, thread_workflows
from temporalio.worker import Worker

from activities import send_reminder
from workflows import ReminderWorkflow


async def main() -> None:
    settings = Settings()  # DURABLE_AGUI_* from the environment
    client = await connect(settings)  # durable-agui's data converter, for both
    agents = load_agents("agents")
    worker = Worker(
        client,
        task_queue=settings.task_queue,
        workflows=[ReminderWorkflow, *thread_workflows()],
        activities=[send_reminder, *thread_activities(settings, agents)],
    )
    print(f"worker: serving task queue {settings.task_queue!r}", flush=True)
    await worker.run()


if __name__ == "__main__":
    asyncio.run(main())
