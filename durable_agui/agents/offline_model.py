"""A deterministic Strands model that needs no network and no credentials.

Behaviour (documented in ``docs/getting-started/demo-agent.md`` and, as the script a test
writes, in ``docs/guides/testing.md``; relied on by the tests):

- When the latest message carries tool results, it answers with one line per result,
  ``<tool> -> <status>: <content>``, in the order of the results. Text blocks are copied
  verbatim, JSON blocks are written as compact JSON, several blocks are joined by one space.
  If that message also carries user text, a last line ``echo: <text>`` follows.
- Otherwise, when the latest user text has lines ``call <tool> <json object>``, it calls
  those tools, in order, in one assistant message (several lines are parallel calls).
- Otherwise it answers ``echo: <text>``.
- Before its answer (text or calls), each line ``think <text>`` of the latest user text
  becomes a reasoning block streamed with that text and a signature
  (``offline-<16 hex digits of its SHA-256>``), each line ``think-redacted <text>`` a
  redacted reasoning block holding the UTF-8 bytes of ``<text>``, in order. The answer
  itself is unchanged (the echo includes those lines).

Text is streamed word by word, a call's arguments (compact JSON) in pieces of at most
``ARGS_PIECE`` characters. ``first_chunk_delay_ms`` and ``chunk_delay_ms`` make a turn look
like a real model's (the benchmark uses 200 ms and 10 ms).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import uuid
from collections.abc import AsyncGenerator, AsyncIterable
from typing import Any, TypeVar, cast

from pydantic import BaseModel
from strands.models.model import Model
from strands.types.content import Messages
from strands.types.streaming import StreamEvent
from strands.types.tools import ToolSpec

T = TypeVar("T", bound=BaseModel)

ARGS_PIECE = 64
"""A call's arguments stream in pieces of at most this many characters (one piece, one
``TOOL_CALL_ARGS``), so arguments up to it arrive whole."""

_CALL_LINE = re.compile(r"^\s*call\s+([A-Za-z0-9_.-]+)\s+(\{.*\})\s*$")
_THINK_LINE = re.compile(r"^\s*think(-redacted)?\s+(.*?)\s*$")


def _render_result_content(blocks: list[Any]) -> str:
    parts: list[str] = []
    for block in blocks:
        if "text" in block:
            parts.append(block["text"])
        elif "json" in block:
            parts.append(json.dumps(block["json"], separators=(",", ":"), ensure_ascii=False))
        else:
            parts.append(f"<{next(iter(block), 'empty')}>")
    return " ".join(parts)


def _tool_names_by_use_id(messages: Messages) -> dict[str, str]:
    names: dict[str, str] = {}
    for message in messages:
        for block in message["content"]:
            if "toolUse" in block:
                names[block["toolUse"]["toolUseId"]] = block["toolUse"]["name"]
    return names


def _parse_calls(text: str) -> list[tuple[str, dict[str, Any]]]:
    calls: list[tuple[str, dict[str, Any]]] = []
    for line in text.splitlines():
        match = _CALL_LINE.match(line)
        if not match:
            continue
        try:
            arguments = json.loads(match.group(2))
        except json.JSONDecodeError:
            continue
        if isinstance(arguments, dict):
            calls.append((match.group(1), arguments))
    return calls


def plan_reply(messages: Messages) -> tuple[str | None, list[tuple[str, dict[str, Any]]]]:
    """Decide the offline model's reply to a conversation.

    Returns:
        ``(text, calls)``: the text to stream (or ``None``) and the tool calls to make,
        each ``(tool_name, arguments)``.
    """
    if not messages:
        return "echo: ", []
    latest = messages[-1]
    text = "\n".join(block["text"] for block in latest["content"] if "text" in block)
    results = [block["toolResult"] for block in latest["content"] if "toolResult" in block]
    if results:
        names = _tool_names_by_use_id(messages)
        lines = [
            f"{names.get(r['toolUseId'], 'unknown_tool')} -> {r.get('status', 'success')}: "
            + _render_result_content(list(r.get("content", [])))
            for r in results
        ]
        if text:
            lines.append(f"echo: {text}")
        return "\n".join(lines), []
    calls = _parse_calls(text)
    if calls:
        return None, calls
    return f"echo: {text}", []


def plan_reasoning(messages: Messages) -> list[tuple[str, bool]]:
    """The reasoning blocks the offline model streams before its reply, each
    ``(text, redacted)``: one per ``think`` / ``think-redacted`` line of the latest user text
    (none when that message carries tool results)."""
    if not messages or any("toolResult" in block for block in messages[-1]["content"]):
        return []
    text = "\n".join(block["text"] for block in messages[-1]["content"] if "text" in block)
    blocks: list[tuple[str, bool]] = []
    for line in text.splitlines():
        match = _THINK_LINE.match(line)
        if match and match.group(2):
            blocks.append((match.group(2), match.group(1) is not None))
    return blocks


def reasoning_signature(text: str) -> str:
    """The signature the offline model gives its reasoning ``text``."""
    return "offline-" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


class OfflineModel(Model):
    """A real Strands ``Model`` that reads its script from the conversation, so a turn is
    deterministic and needs no network or credentials:

    - the latest message carries tool results: one line per result,
      ``<tool> -> <status>: <content>``, then ``echo: <text>`` if it carries user text too;
    - else each line ``call <tool> <json object>`` of the latest user text is a tool call
      (several lines: parallel calls in one message);
    - else ``echo: <text>``;
    - lines ``think <text>`` / ``think-redacted <text>`` add reasoning blocks before it.

    ``first_chunk_delay_ms`` and ``chunk_delay_ms`` (milliseconds): pauses before the first
    chunk and between chunks, to look like a real model. The rules in full: this module's
    docstring.
    """

    def __init__(self, *, first_chunk_delay_ms: float = 0.0, chunk_delay_ms: float = 0.0) -> None:
        self.config: dict[str, Any] = {
            "model_id": "offline",
            "first_chunk_delay_ms": first_chunk_delay_ms,
            "chunk_delay_ms": chunk_delay_ms,
        }

    def update_config(self, **model_config: Any) -> None:
        self.config.update(model_config)

    def get_config(self) -> dict[str, Any]:
        return self.config

    async def structured_output(
        self,
        output_model: type[T],
        prompt: Messages,
        system_prompt: str | None = None,
        **kwargs: Any,
    ) -> AsyncGenerator[dict[str, T | Any], None]:
        raise NotImplementedError("the offline model does not produce structured output")
        yield {}  # pragma: no cover - makes this an async generator

    def plan(self, messages: Messages) -> tuple[str | None, list[tuple[str, dict[str, Any]]]]:
        """The reply to ``messages``: ``plan_reply`` (a subclass may script its own)."""
        return plan_reply(messages)

    def reasoning(self, messages: Messages) -> list[tuple[str, bool]]:
        """The reasoning blocks before the reply: ``plan_reasoning``."""
        return plan_reasoning(messages)

    async def _pause(self, key: str) -> None:
        delay = float(self.config.get(key) or 0.0)
        if delay > 0:
            await asyncio.sleep(delay / 1000)

    async def _reasoning_block(
        self, index: int, thought: str, redacted: bool
    ) -> AsyncIterable[StreamEvent]:
        """One reasoning content block: redacted bytes, or text word by word and a
        signature."""
        yield {"contentBlockStart": {"contentBlockIndex": index, "start": {}}}
        deltas: list[dict[str, Any]] = (
            [{"redactedContent": thought.encode("utf-8")}]
            if redacted
            else [{"text": word} for word in re.findall(r"\S+\s*|\s+", thought)]
            + [{"signature": reasoning_signature(thought)}]
        )
        for delta in deltas:
            await self._pause("chunk_delay_ms")
            yield {
                "contentBlockDelta": {
                    "contentBlockIndex": index,
                    "delta": {"reasoningContent": cast(Any, delta)},
                }
            }
        yield {"contentBlockStop": {"contentBlockIndex": index}}

    async def _text_block(self, index: int, text: str) -> AsyncIterable[StreamEvent]:
        """One text content block, word by word."""
        yield {"contentBlockStart": {"contentBlockIndex": index, "start": {}}}
        words = re.findall(r"\S+\s*|\s+", text) or [""]
        for position, word in enumerate(words):
            if position:
                await self._pause("chunk_delay_ms")
            yield {"contentBlockDelta": {"contentBlockIndex": index, "delta": {"text": word}}}
        yield {"contentBlockStop": {"contentBlockIndex": index}}

    async def _tool_use_block(
        self, index: int, name: str, arguments: dict[str, Any]
    ) -> AsyncIterable[StreamEvent]:
        """One tool-use content block under a new ``toolUseId``, its arguments' JSON in
        pieces of ``ARGS_PIECE`` characters."""
        tool_use_id = f"tooluse_{uuid.uuid4().hex[:20]}"
        yield {
            "contentBlockStart": {
                "contentBlockIndex": index,
                "start": {"toolUse": {"toolUseId": tool_use_id, "name": name}},
            }
        }
        text = json.dumps(arguments, separators=(",", ":"), ensure_ascii=False)
        for start in range(0, len(text), ARGS_PIECE):
            if start:
                await self._pause("chunk_delay_ms")
            piece = text[start : start + ARGS_PIECE]
            yield {
                "contentBlockDelta": {
                    "contentBlockIndex": index,
                    "delta": {"toolUse": {"input": piece}},
                }
            }
        yield {"contentBlockStop": {"contentBlockIndex": index}}

    async def stream(
        self,
        messages: Messages,
        tool_specs: list[ToolSpec] | None = None,
        system_prompt: str | None = None,
        **kwargs: Any,
    ) -> AsyncIterable[StreamEvent]:
        text, calls = self.plan(messages)
        await self._pause("first_chunk_delay_ms")
        yield {"messageStart": {"role": "assistant"}}
        index = 0
        for thought, redacted in self.reasoning(messages):
            async for event in self._reasoning_block(index, thought, redacted):
                yield event
            index += 1
        if text is not None:
            async for event in self._text_block(index, text):
                yield event
            index += 1
        for name, arguments in calls:
            async for event in self._tool_use_block(index, name, arguments):
                yield event
            index += 1
        yield {"messageStop": {"stopReason": "tool_use" if calls else "end_turn"}}
        yield {
            "metadata": {
                "usage": {"inputTokens": 0, "outputTokens": 0, "totalTokens": 0},
                "metrics": {"latencyMs": 0},
            }
        }
