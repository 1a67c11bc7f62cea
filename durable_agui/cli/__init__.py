"""The ``durable-agui`` command line: the dev stack, the worker and the API alone, and
read-only views of threads (the top layer: it may import every room)."""

from durable_agui.cli.main import main

__all__ = ["main"]
