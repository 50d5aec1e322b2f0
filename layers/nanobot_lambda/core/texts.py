"""Prompts and user-facing texts, shipped as template files in `templates/`.

Templates use `string.Template` placeholders (`$name`); rendering fails loudly on a missing
value rather than sending a half-filled text.
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from string import Template


@cache
def load(name: str) -> str:
    """The raw template `templates/<name>.md`, trailing newline removed."""
    return (
        (resources.files("nanobot_lambda") / "templates" / f"{name}.md")
        .read_text(encoding="utf-8")
        .rstrip("\n")
    )


def render(template: str, /, **values: object) -> str:
    """The template with its `$placeholders` filled (any name works, `name` included)."""
    return Template(load(template)).substitute({key: str(value) for key, value in values.items()})
