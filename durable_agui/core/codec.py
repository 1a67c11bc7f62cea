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
from temporalio.api.common.v1 import Payload
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.converter import DataConverter, PayloadCodec

from durable_agui.core.settings import Settings

ENCODING = b"binary/encrypted"
KEY_ID = "encryption-key-id"


def new_key() -> str:
    """A fresh key, as the setting takes it (base64 of 32 random bytes)."""
    return base64.b64encode(AESGCM.generate_key(bit_length=256)).decode("ascii")


class EncryptionCodec(PayloadCodec):
    """Encrypts every payload on the way to Temporal and decrypts it on the way back."""

    def __init__(self, key: bytes, key_id: str = "default") -> None:
        if len(key) != 32:
            raise ValueError("the payload encryption key must be 32 bytes (base64 in settings)")
        self._cipher = AESGCM(key)
        self._key_id = key_id.encode()

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
            if payload.metadata.get(KEY_ID) != self._key_id:
                raise ValueError("payload encrypted with another key id")
            try:
                plain = self._cipher.decrypt(payload.data[:12], payload.data[12:], None)
            except InvalidTag as err:
                raise ValueError("payload does not decrypt with this key") from err
            decoded.append(Payload.FromString(plain))
        return decoded


def codec_for(settings: Settings) -> EncryptionCodec | None:
    if not settings.payload_encryption_key:
        return None
    return EncryptionCodec(base64.b64decode(settings.payload_encryption_key))


def data_converter_for(settings: Settings) -> DataConverter:
    """The pydantic data converter, with the encryption codec when a key is configured.

    Use the same one on the API, the workers, the replayer and test environments.
    """
    codec = codec_for(settings)
    if codec is None:
        return pydantic_data_converter
    return dataclasses.replace(pydantic_data_converter, payload_codec=codec)
