"""``python -m bench.peer``: see ``bench.peer.cli``."""

from bench.peer.cli import main

main()
