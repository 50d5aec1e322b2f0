"""Count the AWS requests boto3 clients send, per service and operation.

Clients copy the default session's event handlers when they are created, so the counter must be
installed before the code under test creates its clients (e.g. before a LocalStack starts).
"""

from __future__ import annotations

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
