"""The ``durable-agui`` console script, before the CLI's modules load."""

from __future__ import annotations

import signal


def main() -> None:
    """Run ``durable_agui.cli.main``. Ctrl-C while its modules load (a second or two on a
    busy machine) ends the process quietly, as Ctrl-C does, instead of with a traceback of
    whichever import it interrupted; the CLI then installs its own handlers."""
    previous = signal.signal(signal.SIGINT, signal.SIG_DFL)
    from durable_agui.cli import main as cli_main

    signal.signal(signal.SIGINT, previous)
    cli_main()
