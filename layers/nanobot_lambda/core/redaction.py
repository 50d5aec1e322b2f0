"""Secrets out of logs and out of what the model sees.

One process-wide `Redactor`: each handler gives it the secret values of its settings once, at
start-up (`logs.configure_logging`); the log filter and the tool registry then replace those
values, and any Telegram bot token in a Bot API or file download URL, with `[REDACTED]`.
Redaction is a safety net: the code is written not to log or show secrets in the first place.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Mapping
from typing import Any

REDACTED = "[REDACTED]"
# Shorter values would blank out ordinary words; secrets that short are no secrets.
MIN_SECRET_CHARS = 6
# https://api.telegram.org/bot<token>/getMe, …/file/bot<token>/<path>: on any host.
_BOT_URL_TOKEN = re.compile(r"(/(?:file/)?bot)\d+:[A-Za-z0-9_-]+")
# The shape of any bot token (digits:35 characters), configured or not.
_BOT_TOKEN = re.compile(r"\b\d{5,}:[A-Za-z0-9_-]{30,}")


class Redactor:
    def __init__(self) -> None:
        self._secrets: set[str] = set()
        self._pattern: re.Pattern[str] | None = None
        self._lock = threading.Lock()

    def add(self, values: Iterable[str]) -> None:
        """Redact these values from now on (a bot token's secret part on its own, too)."""
        with self._lock:
            for value in values:
                for part in (value, value.partition(":")[2]):
                    if len(part) >= MIN_SECRET_CHARS:
                        self._secrets.add(part)
            # Longest first, so a token wins over its own secret part.
            ordered = sorted(self._secrets, key=len, reverse=True)
            self._pattern = re.compile("|".join(map(re.escape, ordered))) if ordered else None

    def redact(self, text: str) -> str:
        pattern = self._pattern
        if pattern is not None:
            text = pattern.sub(REDACTED, text)
        text = _BOT_URL_TOKEN.sub(rf"\1{REDACTED}", text)
        return _BOT_TOKEN.sub(REDACTED, text)

    def redact_value(self, value: Any, depth: int = 0) -> Any:
        """Strings inside dicts, lists and tuples redacted; anything else as it is."""
        if isinstance(value, str):
            return self.redact(value)
        if depth > 20:
            return value
        if isinstance(value, Mapping):
            return {key: self.redact_value(item, depth + 1) for key, item in value.items()}
        if isinstance(value, list):
            return [self.redact_value(item, depth + 1) for item in value]
        if type(value) is tuple:
            return tuple(self.redact_value(item, depth + 1) for item in value)
        return value


REDACTOR = Redactor()


def redact(text: str) -> str:
    """`text` without any configured secret or Telegram bot token."""
    return REDACTOR.redact(text)
