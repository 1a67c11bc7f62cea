"""Large Temporal payloads stored once, beside the sessions: a thread's history holds a
reference to them.

The rule (ours, issue "Each decision written once"): every payload Temporal records is in
the thread's history, so a 400 KB message was recorded twice per run (the run's request,
then the turn's input that passes it on), 800 KB a run, and a thread continued as new every
few runs by size. A payload of at least ``Settings.stored_payload_bytes`` is stored here
instead, under its SHA-256, and the history holds a reference of about 150 bytes. The
mechanism is Temporal's own external storage (``temporalio.converter.ExternalStorage``,
SDK 1.35: the data converter stores and retrieves, after the codec, so an encrypted
payload is stored encrypted); this module is its driver over the session store:

- ``file``: ``<sessions>/.payloads/<sha256>``, written to a temporary file and renamed;
- ``postgres``: the ``durable_agui_payload`` table (migration 0007);
- ``s3``: ``<prefix>/.payloads/<sha256>`` objects.

A payload is never rewritten or deleted (a history may refer to it for as long as Temporal
keeps it). Retrieval checks the SHA-256. The store away (its errors) fails the workflow task
or the activity, which Temporal retries. A payload the store does not hold, or holds
changed, is never taken for the one stored: it reads as ``UNRETRIEVABLE``, which no
converter reads, so what needed it fails by name where it is used (a signal is refused and
listed, an update refused, an activity attempt fails) instead of every workflow task of the
thread failing: a reference anyone can forge into a signal must not wedge a thread, as a
payload that does not decrypt must not (``core/codec.py``). So the store is as essential to a
thread as its session already is: keep them together.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import logging
from collections.abc import Sequence
from dataclasses import dataclass

from temporalio.api.common.v1 import Payload
from temporalio.api.sdk.v1.external_storage_pb2 import ExternalStorageReference
from temporalio.converter import (
    DataConverter,
    ExternalStorage,
    StorageDriver,
    StorageDriverClaim,
    StorageDriverRetrieveContext,
    StorageDriverStoreContext,
)

from durable_agui.core.settings import Settings
from durable_agui.sessions.factory import session_store

logger = logging.getLogger(__name__)

DRIVER_NAME = "durable-agui-session-store"
"""The driver's name in every reference (Temporal looks the driver up by it)."""
NEVER = 2**62
"""The threshold of a process told to store nothing (it still reads references)."""


class StoredPayloadUnwritable(Exception):
    """The ``file`` store could not write a payload (its disk full or away); the other
    stores raise their own errors (``STORE_ERRORS``). Either way the call that carried
    the payload was not sent: the API answers 503 ``SessionStoreUnavailable``."""


UNRETRIEVABLE = b"binary/unretrievable"
"""The encoding of what a reference becomes when the store does not hold its payload, or
holds it changed (its SHA-256 differs): no data converter reads it."""


class SessionStorePayloads(StorageDriver):
    """Temporal's storage driver over the process's session store (the module's rule)."""

    def __init__(self, settings: Settings) -> None:
        self._settings = settings

    def name(self) -> str:
        return DRIVER_NAME

    async def store(
        self, context: StorageDriverStoreContext, payloads: Sequence[Payload]
    ) -> list[StorageDriverClaim]:
        store = session_store(self._settings)
        claims = []
        for payload in payloads:
            data = payload.SerializeToString(deterministic=True)
            sha256 = hashlib.sha256(data).hexdigest()
            try:
                await asyncio.to_thread(store.put_payload, sha256, data)
            except OSError as err:  # the file store's disk: away, as a database can be
                raise StoredPayloadUnwritable(f"storing a payload failed: {err}") from err
            claims.append(StorageDriverClaim(claim_data={"sha256": sha256}))
        return claims

    async def retrieve(
        self, context: StorageDriverRetrieveContext, claims: Sequence[StorageDriverClaim]
    ) -> list[Payload]:
        store = session_store(self._settings)
        payloads = []
        for claim in claims:
            sha256 = claim.claim_data.get("sha256", "")
            data = await asyncio.to_thread(store.get_payload, sha256)
            if data is None or hashlib.sha256(data).hexdigest() != sha256:
                logger.warning(
                    "stored payload %r is %s", sha256[:80], "missing" if data is None else "changed"
                )
                payloads.append(Payload(metadata={"encoding": UNRETRIEVABLE}))
                continue
            payloads.append(Payload.FromString(data))
        return payloads


@dataclass(frozen=True)
class _LenientStorage(ExternalStorage):
    """Temporal's external storage, reading only this driver's well-formed references: a
    payload that only looks like a reference (another driver's name, a claim that does not
    parse; anyone can send one in a signal) is passed on as it is, which no converter
    reads, instead of failing the activation and with it every workflow task of the
    thread. (SDK 1.35 raises there; without external storage configured at all it raises
    TMPRL1105, so a thread of 0.1.0 could be wedged so.)"""

    def _decode_reference(self, payload: Payload) -> ExternalStorageReference | None:
        try:
            reference = super()._decode_reference(payload)
        except Exception:  # a forged reference: not ours to read
            return None
        if reference is None or reference.driver_name != DRIVER_NAME:
            return None
        return reference


@dataclass(frozen=True)
class _LenientConverter(DataConverter):
    """A data converter that reads a payload marked as a codec-encoded reference (SDK 1.35's
    ``__temporal_external_storage_reference`` metadata) that decodes to none as
    ``UNRETRIEVABLE``, for the reason ``_LenientStorage`` gives (the SDK raises TMPRL1106
    there, failing every workflow task of the thread)."""

    async def _decode_reference_payload_sequence(
        self, payloads: Sequence[Payload]
    ) -> list[Payload]:
        decoded: list[Payload] = []
        for payload in payloads:
            try:
                decoded += await super()._decode_reference_payload_sequence([payload])
            except Exception:  # marked as an encoded reference, and none
                decoded.append(Payload(metadata={"encoding": UNRETRIEVABLE}))
        return decoded


def with_payload_storage(converter: DataConverter, settings: Settings) -> DataConverter:
    """``converter`` storing large payloads beside the sessions (``payload_storage``) and
    reading every payload that only looks like a reference as one nothing reads."""
    fields = {f.name: getattr(converter, f.name) for f in dataclasses.fields(converter) if f.init}
    return _LenientConverter(**{**fields, "external_storage": payload_storage(settings)})


def payload_storage(settings: Settings) -> ExternalStorage:
    """Temporal's external storage for this process: payloads of at least
    ``settings.stored_payload_bytes`` stored (none when it is 0), references always read."""
    threshold = settings.stored_payload_bytes or NEVER
    return _LenientStorage(
        drivers=[SessionStorePayloads(settings)], payload_size_threshold=threshold
    )
