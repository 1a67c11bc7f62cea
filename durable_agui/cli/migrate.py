"""``durable-agui migrate``: bring the PostgreSQL session store's schema up to date."""

from __future__ import annotations

import sys

from durable_agui.cli.inspect import store_location
from durable_agui.cli.lifecycle import one_line
from durable_agui.core.settings import Settings
from durable_agui.sessions import session_store


def run_migrate(settings: Settings) -> None:
    """Exit 0 with the schema current; 2 when the store is not ``postgres`` (a deploy job
    that forgot the setting must not pass); 1 with one line when the database refuses."""
    if settings.session_store != "postgres":
        print(
            f"durable-agui migrate: the session store is {settings.session_store!r}, which has "
            "no schema; set DURABLE_AGUI_SESSION_STORE=postgres and DURABLE_AGUI_POSTGRES_URL",
            file=sys.stderr,
        )
        raise SystemExit(2)
    from durable_agui.sessions.postgres import PostgresSessionStore, upgrade_schema

    try:
        store = session_store(settings)
        assert isinstance(store, PostgresSessionStore)
        upgrade_schema(store.engine)
    except Exception as err:
        raise SystemExit(f"durable-agui migrate: {one_line(err)}") from None
    print(f"session store schema is current ({store_location(settings)})")
