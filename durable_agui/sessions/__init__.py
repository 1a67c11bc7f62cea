"""The session store: where a thread's messages live (Strands ``SessionManager``).

One module per store (``file.py``, ``postgres.py``, ``s3.py``), what they share in
``store.py``, the choice by settings in ``factory.py``.
"""

from durable_agui.sessions.factory import session_store
from durable_agui.sessions.records import STORE_ERRORS, SessionStoreInconsistent
from durable_agui.sessions.store import SessionStore

__all__ = [
    "STORE_ERRORS",
    "SessionStore",
    "SessionStoreInconsistent",
    "session_store",
]
