"""Secrets out of logs and out of what the model sees.

One process-wide `Redactor`: each handler gives it the secret values of its settings once, at
start-up (`logs.configure_logging`); the log filter and the tool registry then replace those
values, and any Telegram bot token in a Bot API or file download URL, with `[REDACTED]`.
Redaction is a safety net: the code is written not to log or show secrets in the first place.

Only values of a secret's length are secrets (`MIN_SECRET_CHARS`): a local server's placeholder
key `x` must not blank out every x of an error message. A secret found inside a longer word
(`abc<key>def`) masks that whole word, the run of letters, digits, `_` and `-` around it: no
piece of a word is left beside the mask to read as something else, and no piece of a secret
glued to other text survives it.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Mapping
from typing import Any

REDACTED = "[REDACTED]"
# Shorter values would blank out ordinary words; secrets that short are no secrets.
MIN_SECRET_CHARS = 8
# The characters of one word, as far as a mask reaches: a key's own alphabet (base64url).
_WORD_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
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
        # A token in a URL first: its word (`bot<token>`) keeps its `bot`, so the URL reads.
        text = _BOT_URL_TOKEN.sub(rf"\1{REDACTED}", text)
        pattern = self._pattern
        if pattern is not None:
            text = _mask_words(text, [match.span() for match in pattern.finditer(text)])
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


def _mask_words(text: str, spans: list[tuple[int, int]]) -> str:
    """`text` with each span, widened to the whole word around it, replaced by REDACTED.
    Widened here rather than in the pattern: a pattern with a word on either side of the
    secrets would backtrack through every long run of word characters (a base64 blob)."""
    if not spans:
        return text
    pieces, done = [], 0
    for start, end in spans:
        while start > done and text[start - 1] in _WORD_CHARS:
            start -= 1
        while end < len(text) and text[end] in _WORD_CHARS:
            end += 1
        if end <= done:  # in the word of the previous span: masked already
            continue
        pieces += [text[done:start], REDACTED]
        done = end
    pieces.append(text[done:])
    return "".join(pieces)


REDACTOR = Redactor()


def redact(text: str) -> str:
    """`text` without any configured secret or Telegram bot token."""
    return REDACTOR.redact(text)
