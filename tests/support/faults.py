"""Fault injection for the local Bot API: Telegram answers with errors when a test says so.

The stand-in keeps behaving like Telegram otherwise; a fault is a rule (method, a predicate on
the parameters, the error, how many times) checked before each call.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from nanobot_lambda.operator.local.bot_api import ApiError, LocalBotApi
from nanobot_lambda.operator.local.http import ConnectionDropped


@dataclass
class Fault:
    method: str
    error: ApiError | None  # None: performed, then the connection drops (no answer)
    times: int  # how many calls fail; -1: every call
    when: Callable[[dict[str, Any]], bool]
    injected: int = 0


class BotApiFaults:
    def __init__(self, bot_api: LocalBotApi) -> None:
        self._handle = bot_api.handle
        self._faults: list[Fault] = []
        self._lock = threading.Lock()
        bot_api.handle = self._faulty_handle  # type: ignore[method-assign]

    def fail(
        self,
        method: str,
        code: int,
        description: str = "Internal Server Error",
        *,
        times: int = 1,
        retry_after: int | None = None,
        when: Callable[[dict[str, Any]], bool] = lambda params: True,
    ) -> Fault:
        fault = Fault(method, ApiError(code, description, retry_after), times, when)
        with self._lock:
            self._faults.append(fault)
        return fault

    def drop(
        self,
        method: str,
        *,
        times: int = 1,
        when: Callable[[dict[str, Any]], bool] = lambda params: True,
    ) -> Fault:
        """Telegram performs the call, then the connection drops before its answer."""
        fault = Fault(method, None, times, when)
        with self._lock:
            self._faults.append(fault)
        return fault

    def clear(self) -> None:
        """Telegram answers normally again."""
        with self._lock:
            self._faults.clear()

    def _faulty_handle(self, method: str, params: dict[str, Any]) -> Any:
        dropped = False
        with self._lock:
            for fault in self._faults:
                if fault.method != method or fault.times == 0 or not fault.when(params):
                    continue
                fault.times -= 1 if fault.times > 0 else 0
                fault.injected += 1
                if fault.error is not None:
                    raise fault.error
                dropped = True
                break
        result = self._handle(method, params)
        if dropped:
            raise ConnectionDropped
        return result


class Pauses:
    """A client's waits between attempts (seconds), as asked; none is waited (its `sleep`)."""

    def __init__(self) -> None:
        self.asked: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.asked.append(seconds)


def text_is(text: str) -> Callable[[dict[str, Any]], bool]:
    return lambda params: str(params.get("text", "")) == text
