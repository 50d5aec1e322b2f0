"""Prompts and user-facing texts, shipped as template files in `templates/`.

Templates use `string.Template` placeholders (`$name`); rendering fails loudly on a missing
value rather than sending a half-filled text.

Texts the bot sends are Markdown (the channel renders them, `Channel.send_text`). A value that
someone else chose (a person's name or username, a group's title, a file's name, what the owner
typed after a command) goes into them through `literal`, never as it is: otherwise a stranger
named `[click here](http://evil.example)` is a link in the owner's chat, and one named
`@admin` a mention.
"""

from __future__ import annotations

import json
import string
import unicodedata
from functools import cache
from importlib import resources
from string import Template

LITERAL_MAX_CHARS = 200  # a name, title or file name is one short line, never a wall of text
# Telegram turns some plain text into entities by itself, markup or not: `@name` a mention,
# `#tag` a hashtag, `$USD` a cashtag, `/command` a command the owner sends by tapping it, and
# `host.tld` (with or without `https://`, or in an email address) a link. A word joiner goes
# after each of the characters these start with or turn on: it shows as nothing, and for
# Telegram it is no word, domain or URL character (tdlib's MessageEntity.cpp: match_mentions,
# match_bot_commands, match_hashtags, match_cashtags, match_urls, is_url_unicode_symbol), so
# none forms. A code entity would keep Telegram from looking inside too, but shows the name in
# a code font, as something to copy; the joiners keep it looking like the text around it (only
# a copied name carries them).
WORD_JOINER = "\u2060"
_ENTITY_MARKS = frozenset("@#$/.")
# CommonMark lets any ASCII punctuation be escaped with a backslash, and then it is only itself:
# escaped, no link, emphasis, code span, heading, list marker or HTML can form.
_MARKDOWN_PUNCTUATION = frozenset(string.punctuation)
# Directional formatting that would reorder the text around the name (an RLO can make
# "Bob, id 123" read "321 di ,boB"): dropped. Telegram itself drops U+202A-U+202E.
_BIDI_CONTROLS = dict.fromkeys(
    map(ord, "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
)


# Line breaks JSON leaves as they are: a reader may still take them for the end of a line.
_UNESCAPED_BREAKS = str.maketrans({"\u0085": "\\u0085", "\u2028": "\\u2028", "\u2029": "\\u2029"})


def quoted(text: str) -> str:
    """`text` as one JSON string literal on one line: its quotation marks and backslashes are
    escaped and every line break written out, so no label or quoted text can end the quotation
    it is put in (whatever follows in it, a `]` or a tag, stays inside), and the original can
    be read back."""
    return json.dumps(text, ensure_ascii=False).translate(_UNESCAPED_BREAKS)


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


def literal(text: str, limit: int = LITERAL_MAX_CHARS) -> str:
    """`text`, someone's name or label, as Markdown that shows exactly its characters: no link,
    formatting or mention, in Telegram no entity at all (see `WORD_JOINER`).

    It is one line: line breaks and other control characters become spaces, runs of spaces one
    space, directional overrides are dropped; past `limit` characters it is cut, an ellipsis
    marking the cut.
    """
    flat = " ".join("".join(map(_printable, text.translate(_BIDI_CONTROLS))).split())
    if len(flat) > limit:
        flat = flat[: limit - 1].rstrip() + "…"
    out: list[str] = []
    for char in flat:
        if char in _MARKDOWN_PUNCTUATION:
            out.append("\\")
        out.append(char)
        if char in _ENTITY_MARKS:
            out.append(WORD_JOINER)
    return "".join(out)


def _printable(char: str) -> str:
    category = unicodedata.category(char)
    if category == "Cc":  # a line break, a tab, an escape sequence's ESC
        return " "
    if category == "Cs":  # half a surrogate pair (JSON allows it): not UTF-8, Telegram refuses
        return "\ufffd"
    return char
