"""What the protocol-level doubles share: a quiet keep-alive HTTP handler, serving it on 127.0.0.1 in a
daemon thread, and injected transient failures."""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class Faults:
    """``failing(n)``: the next ``n`` requests, whatever they are, get the double's transient error;
    ``failing(n, after=k)``: the ``k`` requests before them are served."""

    def __init__(self) -> None:
        self._left = 0
        self._spared = 0
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def failing(self, times: int, after: int = 0) -> Iterator[None]:
        with self._lock:
            self._left, self._spared = max(0, int(times)), max(0, int(after))
        try:
            yield
        finally:
            with self._lock:
                self._left = self._spared = 0

    def take(self) -> bool:
        """Whether this request is one of those that must fail."""
        with self._lock:
            if self._spared > 0:
                self._spared -= 1
                return False
            if self._left > 0:
                self._left -= 1
                return True
            return False


class QuietHandler(BaseHTTPRequestHandler):
    """Every method goes to ``_handle(method)``; keep-alive as the SDKs pool connections; no request log."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # TCP_NODELAY: no 40 ms delayed-ACK stalls on keep-alive requests

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _handle(self, method: str) -> None:
        raise NotImplementedError

    def _dispatch(self) -> None:
        self._handle(self.command)

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _dispatch

    def _read_body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _reply(self, status: int, payload: Any, content_type: str = "application/json") -> None:
        """``payload``: bytes or text as is, anything else as JSON (None: an empty body)."""
        if isinstance(payload, bytes):
            data = payload
        elif isinstance(payload, str):
            data = payload.encode()
        else:
            data = b"" if payload is None else json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def serve(handler: type[BaseHTTPRequestHandler], name: str) -> tuple[ThreadingHTTPServer, threading.Thread]:
    """``handler`` served on a free port of 127.0.0.1 by a daemon thread."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, name=name, daemon=True)
    thread.start()
    return server, thread


def shutdown(server: ThreadingHTTPServer | None, thread: threading.Thread | None) -> None:
    if server is not None:
        server.shutdown()
        server.server_close()
    if thread is not None:
        thread.join(timeout=10)
