"""Payload encryption: what Temporal stores of a thread (messages, answers, events) is
ciphertext; the API serves the codec endpoint the Temporal UI uses to show it decoded.

AES-256-GCM per payload (``cryptography``), a fresh 96-bit nonce each time, the key from
``DURABLE_AGUI_PAYLOAD_ENCRYPTION_KEY`` (32 bytes, base64). Search attributes stay plain.
"""

from __future__ import annotations

import base64
import dataclasses
import os
from collections.abc import Sequence

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from google.protobuf.message import DecodeError
from temporalio.api.common.v1 import Payload
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.converter import DataConverter, PayloadCodec

from durable_agui.core.settings import Settings

ENCODING = b"binary/encrypted"
KEY_ID = "encryption-key-id"
UNDECRYPTABLE = b"binary/undecryptable"
"""The encoding of what a lenient codec makes of a payload that does not decrypt: no data
converter reads it, and a raw handler (the thread's signals) refuses it by name."""


def new_key() -> str:
    """A fresh key, as the setting takes it (base64 of 32 random bytes)."""
    return base64.b64encode(AESGCM.generate_key(bit_length=256)).decode("ascii")


class EncryptionCodec(PayloadCodec):
    """Encrypts every payload on the way to Temporal and decrypts it on the way back."""

    def __init__(self, key: bytes, key_id: str = "default", *, strict: bool = True) -> None:
        if len(key) != 32:
            raise ValueError("the payload encryption key must be 32 bytes (base64 in settings)")
        self._cipher = AESGCM(key)
        self._key_id = key_id.encode()
        # Not strict (the workers' and clients' converter): a payload that says it is
        # encrypted but does not decrypt becomes UNDECRYPTABLE instead of an error, so a
        # forged signal is refused by the thread, not a workflow task failed for ever.
        self._strict = strict

    async def encode(self, payloads: Sequence[Payload]) -> list[Payload]:
        encoded: list[Payload] = []
        for payload in payloads:
            nonce = os.urandom(12)
            sealed = self._cipher.encrypt(nonce, payload.SerializeToString(), None)
            encoded.append(
                Payload(metadata={"encoding": ENCODING, KEY_ID: self._key_id}, data=nonce + sealed)
            )
        return encoded

    async def decode(self, payloads: Sequence[Payload]) -> list[Payload]:
        """Decrypt ours; pass through payloads written without encryption (older threads).

        Raises:
            ValueError: for a payload encrypted with another key.
        """
        decoded: list[Payload] = []
        for payload in payloads:
            if payload.metadata.get("encoding") != ENCODING:
                decoded.append(payload)
                continue
            try:
                decoded.append(self._decrypted(payload))
            except ValueError:
                if self._strict:
                    raise
                decoded.append(Payload(metadata={"encoding": UNDECRYPTABLE}))
        return decoded

    def _decrypted(self, payload: Payload) -> Payload:
        if payload.metadata.get(KEY_ID) != self._key_id:
            raise ValueError("payload encrypted with another key id")
        try:
            plain = self._cipher.decrypt(payload.data[:12], payload.data[12:], None)
            return Payload.FromString(plain)
        except (InvalidTag, DecodeError) as err:
            raise ValueError("payload does not decrypt with this key") from err


def codec_for(settings: Settings) -> EncryptionCodec | None:
    if not settings.payload_encryption_key:
        return None
    return EncryptionCodec(base64.b64decode(settings.payload_encryption_key))


def data_converter_for(settings: Settings) -> DataConverter:
    """The pydantic data converter, with the encryption codec when a key is configured.

    ``client.temporal.data_converter`` adds the storage of large payloads: processes use
    that one.
    """
    if not settings.payload_encryption_key:
        return pydantic_data_converter
    key = base64.b64decode(settings.payload_encryption_key)
    codec = EncryptionCodec(key, strict=False)
    return dataclasses.replace(pydantic_data_converter, payload_codec=codec)
