"""A request's fields, checked: each view takes what it needs from the JSON body through these,
and a field that is missing or not what it should be is a 400 naming it."""

from __future__ import annotations

import re
from typing import Any

from nanobot_lambda.functions.console.ports import ConsoleError


def text_field(
    body: dict[str, Any], name: str, max_chars: int, *, empty: bool = False, required: bool = True
) -> str:
    value = body.get(name)
    if value is None and not required:
        return ""
    if not isinstance(value, str) or (not empty and not value.strip()):
        raise ConsoleError(400, f"{name} is required")
    if len(value) > max_chars:
        raise ConsoleError(400, f"{name} is longer than {max_chars} characters")
    return value


def bool_field(body: dict[str, Any], name: str, *, default: bool | None = None) -> bool:
    value = body.get(name, default)
    if not isinstance(value, bool):
        raise ConsoleError(400, f"{name} must be true or false")
    return value


def int_field(body: dict[str, Any], name: str) -> int:
    value = body.get(name)
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool):
        raise ConsoleError(400, f"{name} must be a number")
    return value


def plain(markdown: str) -> str:
    """A chat answer (Markdown, with what someone else chose made literal: core/texts.py) as
    the page shows it: without the backslashes and the word joiners Telegram needed."""
    return re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", markdown.replace("\u2060", "")).replace("**", "")
