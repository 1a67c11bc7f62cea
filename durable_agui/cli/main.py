"""``durable-agui``: run the dev stack, or the worker and the API alone."""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys
import traceback
from typing import NoReturn

from pydantic import ValidationError
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError

from durable_agui.cli.lifecycle import CommandFailed
from durable_agui.cli.parser import build_parser
from durable_agui.sessions import SessionStoreInconsistent

DESCRIPTION = (
    "durable-agui: run the dev stack, or the worker and the API alone; read threads "
    "(threads, thread)."
)
"""What ``--help`` says first (plain text: the docstring's markup would show as is)."""

READ_COMMANDS = ("threads", "thread")
SERVING_COMMANDS = ("dev", "worker", "api")


def main(argv: list[str] | None = None) -> None:
    """Parse ``argv`` (default: the process's arguments) and run the command. Read and
    serving commands end the process themselves (see ``_end``); exit status 1 with one line
    on stderr when a command fails, 2 for bad arguments."""
    args = build_parser(DESCRIPTION).parse_args(argv)
    logging.basicConfig(
        level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s %(message)s"
    )
    if args.command in READ_COMMANDS:
        _end(_read(args), stdout_may_be_closed=True)
    if args.command in SERVING_COMMANDS:
        _import_from_working_directory()
        # As for the reads, and more so here: a served process can hang for good in
        # interpreter shutdown, the Temporal runtime's threads waiting on a finalizing
        # interpreter.
        _end(_served(args), stdout_may_be_closed=False)
    with contextlib.suppress(KeyboardInterrupt):
        try:
            args.run(args)
        except RuntimeError as err:  # a setting that must not start (for example auth)
            raise SystemExit(f"durable-agui {args.command}: {err}") from None


def _read(args: argparse.Namespace) -> int:
    """Run a read command; its exit status."""
    try:
        args.run(args)
    except (RPCError, ApplicationError) as err:  # Temporal, or the thread, refused the read
        print(f"durable-agui {args.command}: {err.message}", file=sys.stderr)
        return 1
    except (ValueError, RuntimeError, SessionStoreInconsistent) as err:
        # A bad argument, Temporal unreachable, a store that lacks the thread's history.
        print(f"durable-agui {args.command}: {err}", file=sys.stderr)
        return 1
    except BrokenPipeError:  # `durable-agui threads | head`: the reader has enough
        return 0
    return 0


def _served(args: argparse.Namespace) -> int:
    """Run a serving command until it stops; its exit status."""
    try:
        args.run(args)
    except KeyboardInterrupt:  # one that came before the command's own handlers
        return 0
    # A part that cannot start, or a setting that must not start (for example auth).
    except (CommandFailed, RuntimeError) as err:
        print(f"durable-agui {args.command}: {err}", file=sys.stderr)
        return 1
    except ValidationError as err:  # a DURABLE_AGUI_* setting out of its bounds
        print(f"durable-agui {args.command}: {settings_problem(err)}", file=sys.stderr)
        return 1
    except Exception:  # a bug: its traceback, and still no interpreter shutdown
        traceback.print_exc()
        return 1
    return 0


def settings_problem(err: ValidationError) -> str:
    """One line naming each refused setting by its environment variable, and why."""
    problems = []
    for error in err.errors():
        name = "_".join(str(part) for part in error["loc"]).upper()
        where = f"DURABLE_AGUI_{name}: " if name else ""
        problems.append(where + error["msg"].removeprefix("Value error, "))
    return "bad settings: " + "; ".join(problems)


def _end(code: int, *, stdout_may_be_closed: bool) -> NoReturn:
    """Exit with ``code`` now. Leaving the Temporal client's native threads to interpreter
    shutdown can abort the process (PyGILState_Release while finalizing)."""
    if stdout_may_be_closed:
        with contextlib.suppress(BrokenPipeError):
            sys.stdout.flush()
    else:
        sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def _import_from_working_directory() -> None:
    """Let ``--agents`` name a module of the directory the command runs in, as
    ``uvicorn api:app`` and ``python -m`` do: a console script's ``sys.path`` starts with
    its own ``bin`` folder instead."""
    here = os.getcwd()
    if here not in sys.path and "" not in sys.path:
        sys.path.insert(0, here)


if __name__ == "__main__":
    main()
