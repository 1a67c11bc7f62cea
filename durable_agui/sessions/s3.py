"""The ``s3`` session store: Strands ``S3SessionManager`` objects in a bucket.

Keys are ``<prefix>/session_<threadId>/agents/agent_default/messages/message_<n>.json`` in
``bucket``, the layout ``S3SessionManager`` documents; AWS S3 or an S3-compatible server
such as MinIO, credentials from the usual AWS chain.

A thread's one writer (``SessionStore.claim``) is the object ``<prefix>/.writers/
<threadId>``. S3 has no locks: a write checks it first, which leaves a window of one
request between the check and the write (the ``file`` and ``postgres`` stores have none).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import boto3
from botocore.config import Config
from strands.session.s3_session_manager import (
    AGENT_PREFIX,
    MESSAGE_PREFIX,
    SESSION_PREFIX,
    S3SessionManager,
)
from strands.session.session_repository import SessionRepository

from durable_agui.core.contract import AGENT_ID
from durable_agui.sessions.records import Writer, WriterSuperseded
from durable_agui.sessions.store import PAYLOADS, SessionStore


class _S3Repository(S3SessionManager):
    """``S3SessionManager``'s repository methods without a session of its own (its
    constructor would create one): the same bucket, prefix and client, the three attributes
    its repository methods read."""

    def __init__(self, bucket: str, prefix: str, client: Any) -> None:
        self.bucket = bucket
        self.prefix = prefix
        self.client = client


class S3SessionStore(SessionStore):
    """Strands ``S3SessionManager`` in ``bucket`` under ``prefix``."""

    kind = "s3"

    def __init__(
        self, bucket: str, prefix: str, region: str | None, endpoint_url: str | None
    ) -> None:
        self.bucket = bucket
        self.prefix = prefix
        self.region = region
        self.endpoint_url = endpoint_url
        # The client S3SessionManager would make: strands-agents in the user agent.
        self.client = boto3.Session(region_name=region).client(
            "s3", config=Config(user_agent_extra="strands-agents"), endpoint_url=endpoint_url
        )
        self._repository = _S3Repository(bucket, prefix, self.client)

    def prepare(self) -> None:
        self.client.head_bucket(Bucket=self.bucket)

    def repository(self) -> SessionRepository:
        return self._repository

    def describe(self) -> str:
        return f"s3://{self.bucket}/{self.prefix}"

    def snapshot(self) -> dict[str, Any]:
        """Every object in the bucket: key -> bytes."""
        keys = [
            item["Key"]
            for page in self.client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket)
            for item in page.get("Contents", [])
        ]
        return {
            key: self.client.get_object(Bucket=self.bucket, Key=key)["Body"].read()
            for key in keys
            if "/.writers/" not in f"/{key}"
        }

    def _writer_key(self, thread_id: str) -> str:
        prefix = self.prefix.strip("/")
        return f"{prefix}/.writers/{thread_id}" if prefix else f".writers/{thread_id}"

    def _held(self, thread_id: str) -> Writer | None:
        try:
            body = self.client.get_object(Bucket=self.bucket, Key=self._writer_key(thread_id))
        except self.client.exceptions.NoSuchKey:
            return None
        since, _, name = body["Body"].read().decode().partition(" ")
        return Writer(int(since), name) if since.isdigit() else None

    def claim(self, thread_id: str, writer: Writer) -> None:
        held = self._held(thread_id)
        if held is not None and held > writer:
            raise WriterSuperseded(f"{held.name} writes thread {thread_id!r} now")
        self.client.put_object(
            Bucket=self.bucket,
            Key=self._writer_key(thread_id),
            Body=f"{writer.since_us} {writer.name}".encode(),
        )

    @contextmanager
    def writing(self, thread_id: str, writer: Writer) -> Iterator[None]:
        held = self._held(thread_id)
        if held != writer:
            who = "nobody" if held is None else held.name
            raise WriterSuperseded(f"{who} writes thread {thread_id!r} now, not {writer.name}")
        yield

    @contextmanager
    def committing(self, thread_id: str, writer: Writer) -> Iterator[SessionRepository]:
        # No lock to hold: the writer is checked before each write, as outside a commit.
        yield self.checked_repository(thread_id, writer)

    def message_key(self, thread_id: str, index: int) -> str:
        """Where ``S3SessionManager`` keeps message ``index`` of the thread's agent (the
        layout in its docstring, from its public name prefixes)."""
        prefix = self.prefix.strip("/")
        session = (
            f"{prefix}/{SESSION_PREFIX}{thread_id}" if prefix else f"{SESSION_PREFIX}{thread_id}"
        )
        return f"{session}/agents/{AGENT_PREFIX}{AGENT_ID}/messages/{MESSAGE_PREFIX}{index}.json"

    def put_payload(self, sha256: str, data: bytes) -> None:
        self.client.put_object(Bucket=self.bucket, Key=self._payload_key(sha256), Body=data)

    def get_payload(self, sha256: str) -> bytes | None:
        try:
            found = self.client.get_object(Bucket=self.bucket, Key=self._payload_key(sha256))
        except self.client.exceptions.NoSuchKey:
            return None
        body: bytes = found["Body"].read()
        return body

    def _payload_key(self, sha256: str) -> str:
        prefix = self.prefix.strip("/")
        return f"{prefix}/{PAYLOADS}/{sha256}" if prefix else f"{PAYLOADS}/{sha256}"

    def truncate_messages(self, thread_id: str, keep: int) -> int:
        return self._truncate_one_by_one(
            thread_id,
            keep,
            lambda index: self.client.delete_object(
                Bucket=self.bucket, Key=self.message_key(thread_id, index)
            ),
        )
