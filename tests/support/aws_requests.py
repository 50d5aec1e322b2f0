"""Count the AWS requests boto3 clients send, per service and operation.

Clients copy the default session's event handlers when they are created, so the counter must be
installed before the code under test creates its clients (e.g. before a LocalStack starts).
"""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any

import boto3


class RequestCounter:
    def __init__(self) -> None:
        self.calls: Counter[tuple[str, str]] = Counter()
        self.tables: Counter[tuple[str, str]] = Counter()  # DynamoDB (table, operation)
        self._session = boto3._get_default_session()
        self._session.events.register("before-send", self._count)
        self._session.events.register("before-parameter-build.dynamodb", self._count_table)

    def _count(self, request: Any = None, event_name: str = "", **_: Any) -> None:
        # event_name is "before-send.<service>.<Operation>"
        _event, service, operation = event_name.split(".", 2)
        self.calls[(service, operation)] += 1

    def _count_table(self, params: Any = None, event_name: str = "", **_: Any) -> None:
        operation = event_name.split(".", 2)[2]
        table = (params or {}).get("TableName", "(several)")
        self.tables[(table, operation)] += 1

    def on_table(self, table: str) -> dict[str, int]:
        """DynamoDB operations on one table (transactions, naming no single table, excluded)."""
        return {op: count for (name, op), count in self.tables.items() if name == table}

    def reset(self) -> None:
        self.calls.clear()
        self.tables.clear()

    def total(self, service: str) -> int:
        return sum(count for (name, _), count in self.calls.items() if name == service)

    def operations(self, service: str) -> dict[str, int]:
        return {op: count for (name, op), count in self.calls.items() if name == service}

    def close(self) -> None:
        self._session.events.unregister("before-send", self._count)
        self._session.events.unregister("before-parameter-build.dynamodb", self._count_table)


class TransactionOverlaps:
    """Which DynamoDB items transactions wrote while another transaction writing them was in
    flight: what AWS cancels with `TransactionConflict` (the moto server does not). A request is in
    flight from its parameters' build to its answer, a little longer than on the server.

    Installed, like `RequestCounter`, before the clients are created."""

    def __init__(self) -> None:
        self.conflicts: Counter[tuple[str, str]] = Counter()  # (pk, sk) -> times overlapped
        self.transactions = 0
        self._in_flight: Counter[tuple[str, str]] = Counter()
        self._lock = threading.Lock()
        self._session = boto3._get_default_session()
        self._session.events.register(_BUILD, self._begin)
        self._session.events.register(_DONE, self._end)

    def _begin(self, params: Any = None, context: Any = None, **_: Any) -> None:
        keys = [_item_key(item) for item in (params or {}).get("TransactItems", [])]
        with self._lock:
            self.transactions += 1
            for key in keys:
                if self._in_flight[key]:
                    self.conflicts[key] += 1
                self._in_flight[key] += 1
        if context is not None:
            context["transaction_keys"] = keys

    def _end(self, context: Any = None, **_: Any) -> None:
        with self._lock:
            for key in (context or {}).get("transaction_keys", []):
                self._in_flight[key] -= 1

    def on(self, partition_prefix: str) -> int:
        """How many writes overlapped on items whose partition starts with the prefix."""
        return sum(n for (pk, _), n in self.conflicts.items() if pk.startswith(partition_prefix))

    def close(self) -> None:
        self._session.events.unregister(_BUILD, self._begin)
        self._session.events.unregister(_DONE, self._end)


_BUILD = "before-parameter-build.dynamodb.TransactWriteItems"
_DONE = "after-call.dynamodb.TransactWriteItems"


def _item_key(item: dict[str, Any]) -> tuple[str, str]:
    (action,) = item.values()
    key = action["Key"] if "Key" in action else action["Item"]
    return key["pk"]["S"], key["sk"]["S"]
