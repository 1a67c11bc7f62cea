"""Local servers that speak two model providers' streaming wire formats, so the real Strands
provider classes (``OpenAIModel``, ``AnthropicModel``) and their SDKs run against them.

Each server is scripted by the conversation it receives: when the last message carries tool
results, it answers with text quoting every result, in order (``got <id>=<content>; ...``);
otherwise it answers with its script's text and tool calls. It records every request body.

- ``OpenAIServer``: ``POST /v1/chat/completions`` with ``stream: true``, answering SSE
  ``data: {chat.completion.chunk}`` lines and ``data: [DONE]``
  (https://platform.openai.com/docs/api-reference/chat-streaming): text deltas, each tool
  call's ``function.arguments`` split over several chunks, parallel calls by ``index``, and a
  final usage chunk when ``stream_options.include_usage`` asks for it.
- ``AnthropicServer``: ``POST /v1/messages`` with ``stream: true``, answering ``message_start``,
  ``content_block_start/delta/stop`` (``text_delta``, ``input_json_delta``), ``message_delta``
  and ``message_stop`` (https://docs.anthropic.com/en/api/messages-streaming).
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, ClassVar, Self

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from durable_agui.cli.devserver import free_port


@dataclass(frozen=True)
class ScriptedCall:
    """A tool call the server makes; its JSON arguments arrive in ``pieces`` chunks."""

    id: str
    name: str
    arguments: dict[str, Any]
    pieces: int = 3

    def argument_pieces(self) -> list[str]:
        return split(json.dumps(self.arguments), self.pieces)


@dataclass(frozen=True)
class Script:
    """The server's answer to a conversation whose last message carries no tool results."""

    text: str
    calls: list[ScriptedCall] = field(default_factory=list)


@dataclass(frozen=True)
class SentToolCall:
    """A tool call as the model was sent it back in a later request."""

    id: str
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class SentToolResult:
    """A tool result as the model was sent it: the call's id and the content's text."""

    id: str
    content: str


def split(text: str, pieces: int) -> list[str]:
    """``text`` cut into ``pieces`` consecutive non-empty parts (fewer if it is shorter)."""
    size = max(1, -(-len(text) // pieces))
    return [text[start : start + size] for start in range(0, len(text), size)]


def quoted(results: list[SentToolResult]) -> str:
    """The answer to tool results: each one's id and content, in the order received."""
    return "; ".join(f"got {result.id}={result.content}" for result in results)


def text_of_content(content: Any) -> str:
    """A provider message's content as text: a string, or its text parts joined by newlines."""
    if isinstance(content, str):
        return content
    return "\n".join(part["text"] for part in content if part.get("type") == "text")


class ModelServer:
    """One provider's endpoint on 127.0.0.1, served by uvicorn in a thread of its own.

    Use as a context manager: the socket listens before the thread starts (so the first
    request waits in its backlog, no polling), and leaving the block stops the server.
    ``requests`` holds every request body received, in order.
    """

    path: ClassVar[str]

    def __init__(self, script: Script) -> None:
        self.script = script
        self.refuse_with: int | None = None
        """When set, every request is answered with this HTTP status and an error body in
        the provider's format (a revoked key: 401)."""
        self.requests: list[dict[str, Any]] = []
        self.port = free_port()
        app = Starlette(routes=[Route(self.path, self._handle, methods=["POST"])])
        self._server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
        self._socket = socket.socket()
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> Self:
        self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._socket.bind(("127.0.0.1", self.port))
        self._socket.listen()
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._socket]}, daemon=True
        )
        self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(30)
        self._socket.close()

    async def _handle(self, request: Request) -> Response:
        body = await request.json()
        self.requests.append(body)
        if self.refuse_with is not None:
            return JSONResponse(self.error_body(self.refuse_with), self.refuse_with)
        if body.get("stream") is not True:
            return JSONResponse({"error": {"message": "this server only streams"}}, 400)
        results = self.tool_results(body)
        script = Script(quoted(results)) if results else self.script
        return StreamingResponse(self.frames(body, script), media_type="text/event-stream")

    def frames(self, body: dict[str, Any], script: Script) -> Iterator[str]:
        """The SSE frames answering ``body`` with ``script``."""
        raise NotImplementedError

    def error_body(self, status: int) -> dict[str, Any]:
        """The provider's error body for ``status``."""
        raise NotImplementedError

    def tool_results(self, body: dict[str, Any]) -> list[SentToolResult]:
        """The tool results the last message of ``body`` carries, in order (none: ``[]``)."""
        raise NotImplementedError

    def tool_calls(self, body: dict[str, Any]) -> list[SentToolCall]:
        """The tool calls of the last assistant message of ``body``, in order."""
        raise NotImplementedError

    def tool_names(self, body: dict[str, Any]) -> list[str]:
        """The names of the tools ``body`` declares to the model."""
        raise NotImplementedError


class OpenAIServer(ModelServer):
    """OpenAI Chat Completions, streamed (what every OpenAI-compatible server speaks)."""

    path = "/v1/chat/completions"

    @property
    def base_url(self) -> str:
        """What ``openai.AsyncOpenAI(base_url=...)`` takes."""
        return f"{self.url}/v1"

    def frames(self, body: dict[str, Any], script: Script) -> Iterator[str]:
        def chunk(choices: list[dict[str, Any]], **extra: Any) -> str:
            frame = {
                "id": "chatcmpl-test",
                "object": "chat.completion.chunk",
                "created": 0,
                "model": body["model"],
                "choices": choices,
                **extra,
            }
            return f"data: {json.dumps(frame)}\n\n"

        def delta(**fields: Any) -> str:
            return chunk([{"index": 0, "delta": fields, "finish_reason": None}])

        yield delta(role="assistant", content="")
        for piece in split(script.text, 4):
            yield delta(content=piece)
        for index, call in enumerate(script.calls):
            yield delta(
                tool_calls=[
                    {
                        "index": index,
                        "id": call.id,
                        "type": "function",
                        "function": {"name": call.name, "arguments": ""},
                    }
                ]
            )
            for piece in call.argument_pieces():
                yield delta(tool_calls=[{"index": index, "function": {"arguments": piece}}])
        finish = "tool_calls" if script.calls else "stop"
        yield chunk([{"index": 0, "delta": {}, "finish_reason": finish}])
        if (body.get("stream_options") or {}).get("include_usage"):
            usage = {"prompt_tokens": 21, "completion_tokens": 13, "total_tokens": 34}
            yield chunk([], usage=usage)
        yield "data: [DONE]\n\n"

    def error_body(self, status: int) -> dict[str, Any]:
        return {"error": {"message": f"refused ({status})", "type": "invalid_request_error"}}

    def tool_results(self, body: dict[str, Any]) -> list[SentToolResult]:
        messages = body["messages"]
        tail = len(messages)
        while tail > 0 and messages[tail - 1]["role"] == "tool":
            tail -= 1
        return [
            SentToolResult(message["tool_call_id"], text_of_content(message["content"]))
            for message in messages[tail:]
        ]

    def tool_calls(self, body: dict[str, Any]) -> list[SentToolCall]:
        assistant = [m for m in body["messages"] if m["role"] == "assistant"][-1]
        return [
            SentToolCall(
                call["id"], call["function"]["name"], json.loads(call["function"]["arguments"])
            )
            for call in assistant.get("tool_calls", [])
        ]

    def tool_names(self, body: dict[str, Any]) -> list[str]:
        return [tool["function"]["name"] for tool in body.get("tools", [])]


class AnthropicServer(ModelServer):
    """Anthropic Messages, streamed."""

    path = "/v1/messages"

    @property
    def base_url(self) -> str:
        """What ``anthropic.AsyncAnthropic(base_url=...)`` takes."""
        return self.url

    def frames(self, body: dict[str, Any], script: Script) -> Iterator[str]:
        def event(kind: str, **fields: Any) -> str:
            return f"event: {kind}\ndata: {json.dumps({'type': kind, **fields})}\n\n"

        message = {
            "id": "msg_test",
            "type": "message",
            "role": "assistant",
            "model": body["model"],
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": 21, "output_tokens": 1},
        }
        yield event("message_start", message=message)
        yield event("content_block_start", index=0, content_block={"type": "text", "text": ""})
        for piece in split(script.text, 4):
            yield event("content_block_delta", index=0, delta={"type": "text_delta", "text": piece})
        yield event("content_block_stop", index=0)
        for index, call in enumerate(script.calls, start=1):
            block = {"type": "tool_use", "id": call.id, "name": call.name, "input": {}}
            yield event("content_block_start", index=index, content_block=block)
            for piece in call.argument_pieces():
                yield event(
                    "content_block_delta",
                    index=index,
                    delta={"type": "input_json_delta", "partial_json": piece},
                )
            yield event("content_block_stop", index=index)
        stop = {"stop_reason": "tool_use" if script.calls else "end_turn", "stop_sequence": None}
        yield event("message_delta", delta=stop, usage={"output_tokens": 13})
        yield event("message_stop")

    def error_body(self, status: int) -> dict[str, Any]:
        return {"type": "error", "error": {"type": "api_error", "message": f"refused ({status})"}}

    def tool_results(self, body: dict[str, Any]) -> list[SentToolResult]:
        last = body["messages"][-1]
        if last["role"] != "user" or isinstance(last["content"], str):
            return []
        return [
            SentToolResult(block["tool_use_id"], text_of_content(block["content"]))
            for block in last["content"]
            if block["type"] == "tool_result"
        ]

    def tool_calls(self, body: dict[str, Any]) -> list[SentToolCall]:
        assistant = [m for m in body["messages"] if m["role"] == "assistant"][-1]
        return [
            SentToolCall(block["id"], block["name"], block["input"])
            for block in assistant["content"]
            if block["type"] == "tool_use"
        ]

    def tool_names(self, body: dict[str, Any]) -> list[str]:
        return [tool["name"] for tool in body.get("tools", [])]
