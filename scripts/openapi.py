"""Write docs/reference/openapi.json: the HTTP API's OpenAPI document, as a server with the
default settings and the demo agent serves it at ``/openapi.json``. No Temporal needed.

    .venv/bin/python scripts/openapi.py           # rewrite the committed file
    .venv/bin/python scripts/openapi.py --check   # exit 1 when the committed file is stale
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

TARGET = Path(__file__).resolve().parent.parent / "docs" / "reference" / "openapi.json"


def document() -> str:
    """The OpenAPI document as the committed file holds it (indented JSON, one newline)."""
    for name in [n for n in os.environ if n.startswith("DURABLE_AGUI_")]:
        del os.environ[name]  # the defaults, whatever this shell has set
    from durable_agui import Settings, create_app

    with tempfile.TemporaryDirectory() as data_dir:
        app = create_app(Settings(data_dir=Path(data_dir)), client=object())  # type: ignore[arg-type]
        return json.dumps(app.openapi(), indent=2, ensure_ascii=False) + "\n"


def main() -> int:
    text = document()
    if sys.argv[1:] == ["--check"]:
        if TARGET.read_text() != text:
            print(f"{TARGET} is stale: run .venv/bin/python scripts/openapi.py", file=sys.stderr)
            return 1
        return 0
    TARGET.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
