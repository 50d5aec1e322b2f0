"""Remove the inline reasoning some models put in their answer, and nothing else.

Some models (DeepSeek-R1 style, served without a reasoning parser) write their reasoning into
the answer between `<think>` and `</think>`. It is never shown. The rule, with tags matched
case-insensitively and exactly as `<think>` / `</think>`:

1. The answer starts with `<think>` (leading whitespace allowed): everything up to the first
   `</think>` is reasoning and goes, wherever that `</think>` is. With no `</think>` the model was
   cut off mid-reasoning and the whole answer goes (the caller then uses its empty-reply text).
2. Elsewhere, a `<think>` … `</think>` pair goes when both tags are outside Markdown code; a
   `<think>` without a `</think>` after it stays, as text that mentions the tag.
3. A `</think>` at the very start (leading whitespace allowed) is dropped, tag only: a provider
   that moved the reasoning to its own field sometimes leaves it behind.
4. Text inside Markdown code is never touched: inline code spans (a run of backticks up to the next
   run of the same length, not across a blank line), fenced blocks (``` or ~~~, up to a closing
   fence of the same character at least as long, or to the end), and indented code (lines
   indented by four spaces or a tab after a blank line).

The result is trimmed of surrounding whitespace. A `</think>` later in the answer with no
`<think>` before it (`reasoning…</think>answer`) is left alone: cutting there would drop the
start of any answer that mentions the closing tag, which is the loss this module prevents.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

_LEADING_OPEN = re.compile(r"\s*<think>", re.IGNORECASE)
_LEADING_CLOSE = re.compile(r"\s*</think>", re.IGNORECASE)
_CLOSE = re.compile(r"</think>", re.IGNORECASE)
_BLANK_LINE = re.compile(r"\n[ \t]*\n")
# What the scanner stops at, leftmost first: a fence opening, an indented code block (with the
# blank line before it), a run of backticks, a think tag.
_TOKEN = re.compile(
    r"(?P<fence>^[ ]{0,3}(?P<mark>`{3,}(?=[^`\n]*$)|~{3,}))"
    r"|(?P<indented>(?:\A|^[ \t]*\n)(?:[ ]{4}|\t)[^\n]*(?:\n(?:[ \t]*\n)*(?:[ ]{4}|\t)[^\n]*)*)"
    r"|(?P<ticks>`+)"
    r"|(?P<tag></?think>)",
    re.MULTILINE | re.IGNORECASE,
)


def strip_thinking(text: str) -> str:
    """`text` without its inline reasoning (see the module docstring for the exact rule)."""
    if opening := _LEADING_OPEN.match(text):
        closing = _CLOSE.search(text, opening.end())
        if closing is None:
            return ""
        text = text[closing.end() :]
    elif stray := _LEADING_CLOSE.match(text):
        text = text[stray.end() :]
    return _strip_blocks(text).strip()


def _strip_blocks(text: str) -> str:
    kept: list[str] = []
    start = 0
    tags = _tags_outside_code(text)
    for tag in tags:
        if tag.group().startswith("</"):
            continue  # a closing tag with no opening before it is text
        # The same iterator: the block ends at the first closing tag after this opening one.
        closing = next((t for t in tags if t.group().startswith("</")), None)
        if closing is None:
            break
        kept.append(text[start : tag.start()])
        start = closing.end()
    kept.append(text[start:])
    return "".join(kept)


def _tags_outside_code(text: str) -> Iterator[re.Match[str]]:
    position = 0
    while token := _TOKEN.search(text, position):
        position = token.end()
        if token["tag"]:
            yield token
        elif token["fence"]:
            position = _fence_end(text, token["mark"], position)
        elif token["ticks"]:
            position = _span_end(text, token["ticks"], position)


def _fence_end(text: str, mark: str, after_opening: int) -> int:
    line_end = text.find("\n", after_opening)
    if line_end == -1:
        return len(text)
    closing = re.compile(rf"^[ ]{{0,3}}{re.escape(mark[0])}{{{len(mark)},}}[ \t]*$", re.MULTILINE)
    found = closing.search(text, line_end + 1)
    return found.end() if found else len(text)


def _span_end(text: str, run: str, after_opening: int) -> int:
    closing = re.compile(rf"(?<!`){run}(?!`)").search(text, after_opening)
    if closing is None or _BLANK_LINE.search(text, after_opening, closing.start()):
        return after_opening  # no span: the backticks are literal
    return closing.end()
