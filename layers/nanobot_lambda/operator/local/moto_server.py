"""moto server as the local AWS, with each DynamoDB and S3 request made atomic.

AWS applies every request atomically: a transaction of `ADD`s, a conditional `PutItem`, an S3
`If-Match` write. moto's threaded server does not: two requests on the same item run their
read-modify-write side by side, and one `ADD` or one conditional write can be lost. Concurrent
writers (forum topics, background tasks, the tests that prove they lose nothing) need AWS's
behaviour, so requests to those two services are serialised here. SQS is left out: its long
polls wait inside the request and would hold everyone else up.

moto's DynamoDB `ADD` on numbers is mended too (`_add_numbers_as_dynamodb_does`): it reads a
stored number without a "." as an int and writes a small sum as "3E-7", so once a chat's cost
summed to less than a millionth of a dollar (an embedding's: 3e-7 USD) every later usage `ADD`
of the chat failed, and with it the transaction that saves the turn. DynamoDB adds any two
numbers exactly to its 38 significant digits (Python's Decimal rounds at 28: a sum of a $1e20
price and a 2e-08 one lost the small one).
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable, Iterable
from decimal import Context, Decimal
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from moto.server import ThreadedMotoServer

SERIALISED_SERVICES = frozenset({"dynamodb", "s3"})
DYNAMODB_DIGITS = Context(prec=38)  # the significant digits a DynamoDB number keeps
# SigV4: "Credential=<key>/<date>/<region>/<service>/aws4_request"
_SERVICE = re.compile(r"Credential=[^/]+/[^/]+/[^/]+/([^/]+)/aws4_request")

WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


def service_of(environ: dict[str, Any]) -> str | None:
    """The AWS service a request is signed for, or None when it is not signed."""
    found = _SERVICE.search(environ.get("HTTP_AUTHORIZATION", ""))
    return found.group(1) if found else None


class AtomicRequests:
    """A WSGI wrapper that runs one DynamoDB or S3 request at a time."""

    def __init__(self, app: WsgiApp) -> None:
        self._app = app
        self._lock = threading.Lock()

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        if service_of(environ) not in SERIALISED_SERVICES:
            return self._app(environ, start_response)
        with self._lock:
            # moto builds the whole response inside the call; materialise it under the lock.
            return list(self._app(environ, start_response))


def _add_numbers_as_dynamodb_does() -> None:
    """Make moto's `ADD` of two numbers exact, written in plain notation (see above)."""
    from moto.dynamodb.models.dynamo_type import DDBType, DynamoType

    moto_add = DynamoType.__add__
    if getattr(moto_add, "mended", False):
        return

    def add(self: DynamoType, other: DynamoType) -> DynamoType:
        if not (self.is_number() and other.is_number()):
            return moto_add(self, other)
        total = DYNAMODB_DIGITS.add(Decimal(self.value), Decimal(other.value))
        return DynamoType({DDBType.NUMBER: format(DYNAMODB_DIGITS.normalize(total), "f")})

    add.mended = True  # type: ignore[attr-defined]
    DynamoType.__add__ = add  # type: ignore[method-assign]


def start_moto_server() -> tuple[ThreadedMotoServer, str]:
    """Start moto server on a free port of 127.0.0.1; returns it and its endpoint URL."""
    from moto.server import ThreadedMotoServer

    _add_numbers_as_dynamodb_does()
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    wsgi = server._server  # moto does not expose its WSGI server
    assert wsgi is not None
    wsgi.app = AtomicRequests(wsgi.app)
    host, port = server.get_host_and_port()
    return server, f"http://{host}:{port}"
