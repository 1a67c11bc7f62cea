"""How a serving command runs and stops: ``until_stopped`` runs it on an event loop of its
own, SIGINT and SIGTERM stop it in order, ``STOP_GRACE_S`` bounds that stop, and
``CommandFailed`` carries the one line it ends with."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import threading
import time
from collections.abc import Callable, Coroutine, Iterator
from typing import Any

STOP_GRACE_S = 15.0
"""Once a serving command starts to stop (a signal, a part that failed), the seconds it has
before the process exits at once with status 1, whatever still hangs."""


class CommandFailed(Exception):
    """A part of a serving command cannot start, or ended by itself; the message is one line.

    Raised inside the event loop instead of ``SystemExit``: asyncio lets that one escape the
    loop past every ``finally``, so that nothing would be stopped in order.
    """


class Stopping:
    """How a serving command ends: SIGINT or SIGTERM cancels its main task, whose ``finally``
    blocks stop its parts; ``arm`` (by the first signal, or by a part that failed) bounds that
    stop to ``STOP_GRACE_S``. When the time is up, or on a signal while it stops,
    ``on_forced_exit`` runs and the process exits at once with status 1.

    The handlers are ``signal.signal`` ones, not ``loop.add_signal_handler``: they run as
    soon as the main thread runs Python code, even while the event loop is blocked. They
    take no lock (a pipe arms the deadline's thread): they may interrupt a holder of one.
    """

    def __init__(self, command: str, on_forced_exit: Callable[[], None]) -> None:
        self._command = command
        self._on_forced_exit = on_forced_exit
        self._armed = False
        self._arming, self._arm_end = os.pipe()
        threading.Thread(target=self._deadline, name="stop-deadline", daemon=True).start()

    @contextlib.contextmanager
    def on_signals(self, task: asyncio.Task[None]) -> Iterator[None]:
        """While inside, SIGINT and SIGTERM cancel ``task``, or exit at once while stopping."""
        loop = task.get_loop()

        def handle(signum: int, frame: object) -> None:
            if self._armed:
                self._exit_now(f"{signal.Signals(signum).name} while stopping")
            self.arm()
            loop.call_soon_threadsafe(task.cancel)

        previous = {sig: signal.signal(sig, handle) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            yield
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    def arm(self) -> None:
        """From now on the process ends within ``STOP_GRACE_S``, stopped or not."""
        if not self._armed:
            self._armed = True
            os.write(self._arm_end, b"!")

    def _deadline(self) -> None:
        os.read(self._arming, 1)
        time.sleep(STOP_GRACE_S)
        self._exit_now(f"still stopping after {STOP_GRACE_S:.0f} s")

    def _exit_now(self, why: str) -> None:
        # os.write, not print: this may run inside a signal handler, in the middle of a print.
        os.write(2, f"durable-agui {self._command}: {why}; exiting now\n".encode())
        self._on_forced_exit()
        os._exit(1)


def until_stopped(
    command: str,
    serve: Callable[[Stopping], Coroutine[Any, Any, None]],
    on_forced_exit: Callable[[], None] = lambda: None,
) -> None:
    """Run ``serve(stopping)`` until it ends, or until SIGINT or SIGTERM stops it (then this
    returns normally); see ``Stopping``. ``on_forced_exit`` must be safe from any thread.

    Raises:
        CommandFailed: from ``serve``.
    """
    stopping = Stopping(command, on_forced_exit)

    async def run() -> None:
        task = asyncio.create_task(serve(stopping))
        with stopping.on_signals(task), contextlib.suppress(asyncio.CancelledError):
            await task

    # Not asyncio.run: it joins the default executor's threads on the way out, and one may
    # be running a tool of a turn that was handed back to Temporal (minutes, at worst).
    # The caller exits the process next, which ends them.
    loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(run())
    finally:
        loop.close()


def one_line(err: Exception) -> str:
    """The driver's own message (SQLAlchemy wraps it with the SQL and a link), first line."""
    lines = str(getattr(err, "orig", None) or err).strip().splitlines()
    return lines[0] if lines else type(err).__name__
