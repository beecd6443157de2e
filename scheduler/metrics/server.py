"""The HTTP side of ``/metrics``: a small server of the standard library in the owner's thread
``gputray-metrics``, answering with prometheus_client's text format (``text/plain; version=0.0.4``).

Only ``GET /metrics`` answers (Prometheus' own path); anything else is a 404 that says where the metrics
are. With ``[metrics] token`` every request must carry ``Authorization: Bearer TOKEN`` (compared in
constant time), else 401. One request at a time: a scraper comes every few seconds, and a thread per
request would cost more than the answer; a client that stalls is cut off after ``REQUEST_TIMEOUT_S``.
Nothing is written to stderr (the tray has none).
"""

from __future__ import annotations

import hmac
import socket
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST

from gputray.scheduler.metrics.listen import ListenAddress

REQUEST_TIMEOUT_S = 5.0


def _handler(render: Callable[[], bytes], token: str) -> type[BaseHTTPRequestHandler]:
    expected = f"Bearer {token}".encode()

    class Handler(BaseHTTPRequestHandler):
        timeout = REQUEST_TIMEOUT_S
        server_version = "gputray"

        def do_GET(self) -> None:
            path = self.path.split("?", 1)[0]
            if path not in ("/metrics", "/metrics/"):
                self._answer(404, b"gputray: the metrics are at /metrics\n")
            elif token and not hmac.compare_digest(self.headers.get("Authorization", "").encode(), expected):
                self._answer(
                    401,
                    b"gputray: these metrics need [metrics] token (Authorization: Bearer TOKEN)\n",
                    [("WWW-Authenticate", 'Bearer realm="gputray"')],
                )
            else:
                self._answer(200, render(), content_type=CONTENT_TYPE_LATEST)

        def _answer(
            self,
            status: int,
            body: bytes,
            headers: list[tuple[str, str]] | None = None,
            content_type: str = "text/plain; charset=utf-8",
        ) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            for name, value in headers or []:
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


class _Server6(HTTPServer):
    address_family = socket.AF_INET6


class MetricsServer:
    def __init__(self, address: ListenAddress, render: Callable[[], bytes], *, token: str = "") -> None:
        self.address = address
        self._handler = _handler(render, token)
        self._server: HTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        """The port bound (the configured one, or the one the system chose for port 0)."""
        if self._server is None:
            raise RuntimeError("the metrics server is not started")
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        return self.address.url(self.port)

    def start(self) -> None:
        """Bind and serve; OSError (address in use, not an address of this machine) when it cannot."""
        kind = _Server6 if self.address.ipv6 else HTTPServer
        self._server = kind((self.address.host, self.address.port), self._handler)
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.5},
            name="gputray-metrics",
            daemon=True,
        )
        self._thread.start()

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
