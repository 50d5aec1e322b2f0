"""The load simulation's instruments (bench/load.py): the model every turn asks, and moto
server's request log. `make bench` skips this file."""

from __future__ import annotations

import io
import json
import math
import re
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

from nanobot_lambda.operator.local.moto_server import service_of
from tests.support.scripted_model import ScriptedModelServer, Step

TURN_TAG = re.compile(r"\bt(\d{6})\b")  # the tag each simulated message starts with
WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]
DYNAMODB_READS = frozenset({"GetItem", "Query", "Scan", "BatchGetItem", "TransactGetItems"})
DYNAMODB_WRITES = frozenset(
    {"PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems"}
)
CONFLICTS = ("ConditionalCheckFailedException", "TransactionCanceledException")
_CREDENTIAL = re.compile(r"Credential=([^/]+)/")


def answer(tokens: int) -> str:
    vocabulary = ("the", "plan", "for", "today", "starts", "with", "coffee", "then", "a", "walk")
    return " ".join(vocabulary[n % len(vocabulary)] for n in range(tokens))


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return ""


def turn_of(request: dict[str, Any]) -> int | None:
    """The simulated turn a model request is for: the tag of its last user message."""
    for message in reversed(request.get("messages") or []):
        if message.get("role") == "user":
            found = TURN_TAG.search(_text_of(message.get("content")))
            return int(found.group(1)) if found else None
    return None


class LoadModel(ScriptedModelServer):
    """The streaming stand-in model (tests/support/scripted_model.py) answering every request
    alike: `tokens` words, the first after `first_token` seconds, then `per_second` a second
    (a request that does not stream waits as long, then gets it whole). It counts the requests
    per simulated turn (`asked`), and keeps none of them."""

    def __init__(self, tokens: int, first_token: float, per_second: float) -> None:
        super().__init__()
        self._answer = answer(tokens)
        self._tokens = tokens
        self._first_token = first_token
        self._per_second = per_second
        self.asked: Counter[int | None] = Counter()  # turn number (None: untagged) -> requests
        self._asked_lock = threading.Lock()

    def _take(self, request: dict[str, Any], headers: dict[str, str]) -> Step | None:
        with self._asked_lock:
            self.asked[turn_of(request)] += 1
        step = Step(
            content=self._answer,
            first_token_delay=self._first_token,
            tokens_per_second=self._per_second,
            completion_tokens=self._tokens,
        )
        if not request.get("stream"):
            time.sleep(self._first_token + self._tokens / self._per_second)
        return step


class AwsRequestLog:
    """A WSGI wrapper around moto server that counts what each caller (its access key) asks of
    DynamoDB and S3. moto counts no capacity, so DynamoDB's units are estimated from the bytes:
    a read, a unit per 4 KB of the answer (half for an eventually consistent one); a write, a
    unit per KB of each item sent (two in a transaction). UpdateItem is billed on the item's
    whole size, which the request does not show: write units are a floor. Conflicts are the
    writes refused with ConditionalCheckFailed or TransactionCanceled.

    It also runs one SQS request at a time, as AWS applies each atomically: moto's SQS does not
    (a receive iterating a queue's in-flight messages while another thread deletes one fails
    with "Set changed size during iteration"). The local stack leaves SQS out because a long
    poll would hold everyone up; the simulation's pollers never long-poll (a long poll's
    request is let through)."""

    def __init__(self, app: WsgiApp) -> None:
        self._app = app
        self._lock = threading.Lock()
        self.dynamodb: Counter[tuple[str, str]] = Counter()  # (caller, operation)
        self.conflicts: Counter[tuple[str, str, str]] = Counter()  # (caller, operation, error)
        self.read_units: Counter[str] = Counter()
        self.write_units: Counter[str] = Counter()
        self.s3: Counter[tuple[str, str]] = Counter()  # (caller, kind)
        self._sqs_lock = threading.Lock()

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        service = service_of(environ)
        if service == "sqs":
            return self._sqs(environ, start_response)
        if service == "s3":
            self._count_s3(environ)
        if service != "dynamodb":
            return self._app(environ, start_response)
        found = _CREDENTIAL.search(environ.get("HTTP_AUTHORIZATION", ""))
        caller = found.group(1) if found else "?"
        operation = environ.get("HTTP_X_AMZ_TARGET", "").rpartition(".")[2]
        body = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
        environ["wsgi.input"] = io.BytesIO(body)
        statuses: list[str] = []

        def start(status: str, headers: Any, *rest: Any) -> Any:
            statuses.append(status)
            return start_response(status, headers, *rest)

        chunks = list(self._app(environ, start))
        answer = b"".join(chunks)
        error = _error_type(answer) if statuses and not statuses[0].startswith("2") else ""
        with self._lock:
            self.dynamodb[(caller, operation)] += 1
            if error in CONFLICTS:
                self.conflicts[(caller, operation, error)] += 1
            elif not error:
                self.read_units[caller] += _read_units(operation, body, answer)
                self.write_units[caller] += _write_units(operation, body)
        return chunks

    def _sqs(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        body = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
        environ["wsgi.input"] = io.BytesIO(body)
        try:
            waits = bool(json.loads(body or b"{}").get("WaitTimeSeconds"))
        except (ValueError, AttributeError):
            waits = False  # the query protocol: no long poll here
        if waits:
            return self._app(environ, start_response)
        with self._sqs_lock:
            return list(self._app(environ, start_response))

    def _count_s3(self, environ: dict[str, Any]) -> None:
        found = _CREDENTIAL.search(environ.get("HTTP_AUTHORIZATION", ""))
        method, query = environ.get("REQUEST_METHOD", ""), environ.get("QUERY_STRING", "")
        kind = "LIST" if method == "GET" and "list-type" in query else method
        with self._lock:
            self.s3[(found.group(1) if found else "?", kind)] += 1

    def reset(self) -> None:
        with self._lock:
            for counter in (self.dynamodb, self.conflicts, self.read_units, self.write_units):
                counter.clear()
            self.s3.clear()


def _error_type(answer: bytes) -> str:
    try:
        return str(json.loads(answer).get("__type", "")).rpartition("#")[2]
    except ValueError:
        return "?"


def _read_units(operation: str, body: bytes, answer: bytes) -> float:
    if operation not in DYNAMODB_READS:
        return 0.0
    units = max(1, math.ceil(len(answer) / 4096))
    if operation == "TransactGetItems":
        return 2.0 * units
    consistent = json.loads(body or b"{}").get("ConsistentRead") is True
    return float(units) if consistent else units / 2


def _write_units(operation: str, body: bytes) -> float:
    if operation not in DYNAMODB_WRITES:
        return 0.0
    if operation in ("PutItem", "UpdateItem", "DeleteItem"):
        return float(max(1, math.ceil(len(body) / 1024)))
    request = json.loads(body)
    if operation == "TransactWriteItems":
        items = request.get("TransactItems", [])
        return 2.0 * sum(max(1, math.ceil(len(json.dumps(item)) / 1024)) for item in items)
    writes = [item for table in request.get("RequestItems", {}).values() for item in table]
    return float(sum(max(1, math.ceil(len(json.dumps(item)) / 1024)) for item in writes))
