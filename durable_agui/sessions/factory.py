"""The session store the settings choose (``DURABLE_AGUI_SESSION_STORE``), one per process
and configuration.

Each store is built from a frozen configuration holding exactly what its constructor takes,
and that configuration is the cache key: a setting that configures a store cannot be left
out of the key, and settings that configure other stores do not split the cache.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from durable_agui.sessions.file import FileSessionStore
from durable_agui.sessions.s3 import S3SessionStore
from durable_agui.sessions.store import SessionStore

if TYPE_CHECKING:
    from durable_agui.core.settings import Settings


@dataclass(frozen=True)
class FileStoreConfig:
    sessions_dir: Path

    def build(self) -> SessionStore:
        return FileSessionStore(self.sessions_dir)


@dataclass(frozen=True)
class PostgresStoreConfig:
    url: str
    pool_size: int
    migrate: bool
    timeout_ms: int

    def build(self) -> SessionStore:
        from durable_agui.sessions.postgres import (
            PostgresSessionStore,
        )  # Alembic, imported on first use

        return PostgresSessionStore(
            self.url, pool_size=self.pool_size, migrate=self.migrate, timeout_ms=self.timeout_ms
        )


@dataclass(frozen=True)
class S3StoreConfig:
    bucket: str
    prefix: str
    region: str | None
    endpoint_url: str | None

    def build(self) -> SessionStore:
        return S3SessionStore(self.bucket, self.prefix, self.region, self.endpoint_url)


StoreConfig = FileStoreConfig | PostgresStoreConfig | S3StoreConfig


def store_config(settings: Settings) -> StoreConfig:
    """What configures the store ``settings`` choose, and nothing else.

    Raises:
        ValueError: ``postgres`` without ``postgres_url``, or ``s3`` without ``s3_bucket``.
    """
    if settings.session_store == "postgres":
        if not settings.postgres_url:
            raise ValueError("DURABLE_AGUI_SESSION_STORE=postgres needs DURABLE_AGUI_POSTGRES_URL")
        return PostgresStoreConfig(
            url=settings.postgres_url,
            pool_size=settings.postgres_pool_size,
            migrate=settings.postgres_migrate,
            timeout_ms=settings.postgres_timeout_ms,
        )
    if settings.session_store == "s3":
        if not settings.s3_bucket:
            raise ValueError("DURABLE_AGUI_SESSION_STORE=s3 needs DURABLE_AGUI_S3_BUCKET")
        return S3StoreConfig(
            bucket=settings.s3_bucket,
            prefix=settings.s3_prefix,
            region=settings.s3_region,
            endpoint_url=settings.s3_endpoint_url,
        )
    return FileStoreConfig(sessions_dir=settings.sessions_dir)


_stores: dict[StoreConfig, SessionStore] = {}
_stores_lock = threading.Lock()


def session_store(settings: Settings) -> SessionStore:
    """The process's session store for ``settings`` (one per configuration, so a PostgreSQL
    store shares one connection pool).

    Raises:
        ValueError: ``postgres`` without ``postgres_url``, or ``s3`` without ``s3_bucket``.
    """
    config = store_config(settings)
    with _stores_lock:
        store = _stores.get(config)
        if store is None:
            store = _stores[config] = config.build()
        return store
