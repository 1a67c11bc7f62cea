"""A real HTTP server on 127.0.0.1 that serves media for the URL-source tests, recording
every path it was asked for."""

from __future__ import annotations

import base64
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from durable_agui.cli.devserver import free_port

PNG_BASE64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
PNG = base64.b64decode(PNG_BASE64)
"""A 1x1 PNG."""
PDF = b"%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n"
BIG = 64_000
"""Bytes of ``/big.png``: over the limit the media tests' stack sets."""


class MediaServer:
    """Serves ``/cat.png`` (image/png), ``/doc.pdf`` (application/pdf), ``/untyped``
    (the PNG with no ``Content-Type``), ``/big.png`` (``BIG`` bytes), ``/to-cat`` (a
    redirect to ``/cat.png`` on this host), ``/to-localhost`` (a redirect to this server
    under the name ``localhost``), anything else 404."""

    def __init__(self) -> None:
        self.port = free_port()
        self.requests: list[str] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:
                return

            def do_GET(self) -> None:
                server.requests.append(self.path)
                routes: dict[str, tuple[bytes, str | None]] = {
                    "/cat.png": (PNG, "image/png"),
                    "/doc.pdf": (PDF, "application/pdf"),
                    "/untyped": (PNG, None),
                    "/big.png": (b"\0" * BIG, "image/png"),
                }
                if self.path == "/to-cat":
                    self._redirect("/cat.png")
                elif self.path == "/to-localhost":
                    self._redirect(f"http://localhost:{server.port}/cat.png")
                elif self.path in routes:
                    body, content_type = routes[self.path]
                    self.send_response(200)
                    if content_type:
                        self.send_header("Content-Type", content_type)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                else:
                    self.send_error(404)

            def _redirect(self, location: str) -> None:
                self.send_response(302)
                self.send_header("Location", location)
                self.send_header("Content-Length", "0")
                self.end_headers()

        self._http = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self._thread = threading.Thread(target=self._http.serve_forever, daemon=True)

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._http.shutdown()
        self._http.server_close()
        self._thread.join(timeout=5)
