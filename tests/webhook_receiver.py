"""A real HTTP server on 127.0.0.1 that receives webhook deliveries, recording each attempt,
and can fail the first ones or all of them (a receiver that is down)."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from durable_agui.cli.devserver import free_port


@dataclass
class Attempt:
    headers: dict[str, str]
    body: bytes
    status: int


class WebhookReceiver:
    """Answers ``POST /hooks`` 503 for the next ``fail_next`` attempts (all of them while
    ``down``), else 204; ``attempts`` holds every one, in order of arrival."""

    def __init__(self) -> None:
        self.port = free_port()
        self.attempts: list[Attempt] = []
        self.fail_next = 0
        self.down = False
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:
                return

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                with receiver._lock:
                    failing = receiver.down or receiver.fail_next > 0
                    receiver.fail_next = max(receiver.fail_next - 1, 0)
                    status = 503 if failing else 204
                    headers = {k.lower(): v for k, v in self.headers.items()}
                    receiver.attempts.append(Attempt(headers, body, status))
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hooks"

    def reset(self, fail_next: int = 0, down: bool = False) -> None:
        """Forget the attempts so far, and fail the next ``fail_next`` (all, if ``down``)."""
        with self._lock:
            self.attempts = []
            self.fail_next, self.down = fail_next, down

    def delivered(self) -> list[Attempt]:
        with self._lock:
            return [a for a in self.attempts if a.status == 204]

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> WebhookReceiver:
        """Started; stopped on leaving the block, also when it fails."""
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
