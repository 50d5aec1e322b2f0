"""A forwarding HTTP proxy on 127.0.0.1 where the soak's faults strike: the network between the
agent_turn worker and the services it calls (moto server as AWS, the local Bot API).

Every request is handed to `intercept` first, which may let it through (None) or return a
`Fault`:
- `answer`: the service never sees the call; the proxy answers for it (Telegram's 429 or 500);
- `kill_before`: the worker is killed (SIGKILL) and the call never reaches the service;
- `kill_after`: the call is performed, then the worker is killed before it hears the answer
  (the write happened, the message was accepted: the client never knew);
- `drop_after`: the call is performed, then the connection is dropped without an answer (the
  client sees a reset and decides what to do).
`performed(call, status, body, answered)` is told the service's answer to every call it
performed, and whether the client got it: the checker learns which job each message was sent
for, and which messages Telegram accepted without the client knowing.

Being a proxy keeps the services untouched and the faults where a real network fails; it also
tells the worker's calls from everyone else's (the webhook, the harness and the checker call
the services directly).
"""

from __future__ import annotations

import contextlib
import http.client
import logging
import socket
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import Literal
from urllib.parse import urlsplit

from nanobot_lambda.operator.local.http import BackgroundHttpServer

logger = logging.getLogger(__name__)

# Not forwarded: they describe one hop (this proxy recomputes the length of what it sends).
_HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-connection",
        "transfer-encoding",
        "te",
        "trailer",
        "upgrade",
        "expect",
        "content-length",
    }
)


@dataclass(frozen=True)
class Call:
    method: str  # HTTP method
    path: str
    headers: dict[str, str]  # lower-case names
    body: bytes


@dataclass(frozen=True)
class Fault:
    action: Literal["answer", "kill_before", "kill_after", "drop_after"]
    status: int = 0  # for "answer"
    body: bytes = b""  # for "answer"


class ChaosProxy(BackgroundHttpServer):
    def __init__(
        self,
        target: str,
        *,
        intercept: Callable[[Call], Fault | None],
        kill: Callable[[], None],
        performed: Callable[[Call, int, bytes, bool], None] = lambda *_: None,
    ) -> None:
        split = urlsplit(target)
        self._host, self._port = split.hostname or "127.0.0.1", split.port or 80
        self._intercept = intercept
        self._kill = kill
        self._performed = performed
        super().__init__(self._request_handler())

    def forward(self, call: Call) -> tuple[int, list[tuple[str, str]], bytes]:
        connection = http.client.HTTPConnection(self._host, self._port, timeout=120)
        try:
            headers = {k: v for k, v in call.headers.items() if k not in _HOP_BY_HOP}
            if call.body or call.method in ("POST", "PUT"):
                headers["content-length"] = str(len(call.body))
            connection.request(call.method, call.path, call.body or None, headers)
            response = connection.getresponse()
            body = response.read()
            # The length is kept for HEAD (it describes the object); _respond sets it otherwise.
            kept = [
                (k, v)
                for k, v in response.getheaders()
                if k.lower() not in _HOP_BY_HOP or k.lower() == "content-length"
            ]
            return response.status, kept, body
        finally:
            connection.close()

    def _request_handler(self) -> type[BaseHTTPRequestHandler]:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, and `Expect: 100-continue` answered

            def do_GET(self) -> None:
                self._relay()

            def do_HEAD(self) -> None:
                self._relay()

            def do_POST(self) -> None:
                self._relay()

            def do_PUT(self) -> None:
                self._relay()

            def do_DELETE(self) -> None:
                self._relay()

            def _read_body(self) -> bytes:
                if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
                    body = bytearray()
                    while True:
                        size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                        if size == 0:
                            while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                                pass  # trailers
                            return bytes(body)
                        body += self.rfile.read(size)
                        self.rfile.readline()
                length = int(self.headers.get("Content-Length") or 0)
                return self.rfile.read(length) if length else b""

            def _unanswered(self) -> None:
                self.close_connection = True
                with contextlib.suppress(OSError):  # the client may be gone already
                    self.connection.shutdown(socket.SHUT_RDWR)

            def _relay(self) -> None:
                call = Call(
                    self.command,
                    self.path,
                    {k.lower(): v for k, v in self.headers.items()},
                    self._read_body(),
                )
                fault = proxy._intercept(call)
                if fault is not None and fault.action == "answer":
                    self._respond(fault.status, [("Content-Type", "application/json")], fault.body)
                    return
                if fault is not None and fault.action == "kill_before":
                    proxy._kill()
                    self._unanswered()
                    return
                try:
                    status, headers, body = proxy.forward(call)
                except OSError:
                    logger.exception("the proxied service did not answer")
                    self._unanswered()
                    return
                proxy._performed(call, status, body, fault is None)
                if fault is not None:  # kill_after, drop_after: performed, never answered
                    if fault.action == "kill_after":
                        proxy._kill()
                    self._unanswered()
                    return
                self._respond(status, headers, body)

            def _respond(self, status: int, headers: list[tuple[str, str]], body: bytes) -> None:
                # The client may have gone: killed meanwhile, or a draft past its read time-out.
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self._write(status, headers, body)

            def _write(self, status: int, headers: list[tuple[str, str]], body: bytes) -> None:
                self.send_response(status)
                head = self.command == "HEAD"
                for name, value in headers:
                    if head or name.lower() != "content-length":
                        self.send_header(name, value)
                if not head:
                    self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if not head:
                    self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                pass  # Bot API paths hold the token

        return Handler
