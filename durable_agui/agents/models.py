"""Choosing the Strands model provider from configuration (``DURABLE_AGUI_MODEL``)."""

from __future__ import annotations

import os

from strands.models.model import Model

from durable_agui.agents.offline_model import OfflineModel
from durable_agui.core.settings import Settings

PROVIDERS = ("offline", "bedrock", "anthropic", "openai", "ollama")
"""The providers a model string may name (``<provider>:<model-id>``, or ``offline``)."""


def check_model_spec(spec: str) -> None:
    """Refuse a model string whose provider is not one of ``PROVIDERS``, or that names no
    model id where the provider needs one (all but ``offline`` and ``bedrock``). Whether the
    provider's SDK is installed is known when a turn builds the model.

    Raises:
        ValueError: naming the string and what is accepted.
    """
    provider, _, model_id = spec.partition(":")
    if provider not in PROVIDERS:
        raise ValueError(
            f"unknown model provider {provider!r} in {spec[:80]!r}; "
            "use offline, bedrock:<id>, anthropic:<id>, openai:<id> or ollama:<id>"
        )
    if not model_id and provider not in ("offline", "bedrock"):
        raise ValueError(f"{spec[:80]!r} names no model: use {provider}:<model-id>")


def build_model(settings: Settings, model: Model | str | None = None) -> Model:
    """The model of one turn: ``model`` itself when it is a Strands ``Model`` (an agent's
    own), else a fresh one as the provider string ``model`` names it, else as
    ``settings.model`` (``DURABLE_AGUI_MODEL``) does.

    ``offline``; ``bedrock:<model-id>`` (AWS credentials from the usual chain);
    ``anthropic:<model-id>`` (``ANTHROPIC_API_KEY``); ``openai:<model-id>``
    (``OPENAI_API_KEY``, and ``OPENAI_BASE_URL`` for any OpenAI-compatible server);
    ``ollama:<model-id>`` (``OLLAMA_HOST``, default ``http://127.0.0.1:11434``).
    Provider SDKs are Strands extras (``pip install 'strands-agents[openai]'`` ...).

    Raises:
        ValueError: for an unknown provider name.
    """
    if isinstance(model, Model):
        return model
    spec = model or settings.model
    check_model_spec(spec)
    provider, _, model_id = spec.partition(":")
    if provider == "offline":
        return OfflineModel(
            first_chunk_delay_ms=settings.offline_first_chunk_delay_ms,
            chunk_delay_ms=settings.offline_chunk_delay_ms,
        )
    if provider == "bedrock":
        from strands.models.bedrock import BedrockModel

        return BedrockModel(model_id=model_id) if model_id else BedrockModel()
    if provider == "anthropic":
        from strands.models.anthropic import AnthropicModel

        return AnthropicModel(model_id=model_id, max_tokens=4096)
    if provider == "openai":
        from strands.models.openai import OpenAIModel

        client_args = (
            {"base_url": os.environ["OPENAI_BASE_URL"]} if "OPENAI_BASE_URL" in os.environ else {}
        )
        return OpenAIModel(client_args=client_args, model_id=model_id)
    if provider == "ollama":
        from strands.models.ollama import OllamaModel

        return OllamaModel(
            os.environ.get("OLLAMA_HOST", "http://127.0.0.1:11434"), model_id=model_id
        )
    raise AssertionError(f"provider {provider!r} is in PROVIDERS but not built here")
