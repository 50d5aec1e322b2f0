"""Validate HTML the way the Telegram Bot API does for `parse_mode=HTML`.

A hand-written scanner modelled on Telegram's own parser (tdlib `parse_html`): the same tag
set, the same attribute syntax and Telegram's error wording. It is deliberately a little
stricter than Telegram where Telegram silently repairs input the Bot API documentation calls
invalid: a `&` that does not start `&lt;` `&gt;` `&amp;` `&quot;` or a numeric entity (with
its `;`), `<a>` without `href`, formatting nested inside `code`/`pre` (other than
`<pre><code>`), and a link in a link or a blockquote in a blockquote are errors here. So text
that passes this checker is safe to send; text that Telegram rejects is rejected here too.
"""

from __future__ import annotations

import re
from typing import NamedTuple

# Tags Telegram accepts (https://core.telegram.org/bots/api#html-style).
ALLOWED_TAGS = frozenset(
    {
        "a", "b", "strong", "i", "em", "u", "ins", "s", "strike", "del",
        "span", "tg-spoiler", "tg-emoji", "code", "pre", "blockquote",
    }
)  # fmt: skip
_NAMED_ENTITIES = {"lt": "<", "gt": ">", "amp": "&", "quot": '"'}
_WHITESPACE = " \t\n\r\v\f"
_SPECIAL = re.compile("[<&]")
# Tags that may not contain another tag of this set (Telegram can't nest these entities).
_NO_NESTING: dict[str, frozenset[str]] = {
    "a": frozenset({"a"}),
    "blockquote": frozenset({"blockquote"}),
}


class TelegramHtmlError(ValueError):
    """HTML that Telegram would refuse; `str()` reads like the Bot API's description."""


class Tag(NamedTuple):
    """A tag found by `scan_telegram_html`, anchored at an offset of the resulting text."""

    pos: int  # index into the plain text (code points) where the tag sits
    name: str  # lower-case tag name
    raw: str  # the tag as written for start tags, the canonical `</name>` for end tags
    closing: bool


def tag_attributes(tag: Tag) -> dict[str, str]:
    """The attributes of a start tag `scan_telegram_html` found (`href`, `class`...)."""
    if tag.closing:
        return {}
    return _parse_attributes(tag.raw, tag.name, 0, 1 + len(tag.name))[0]


def telegram_length(text: str) -> int:
    """Length as Telegram counts it: UTF-16 code units (astral-plane characters count 2)."""
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def parse_telegram_html(html: str) -> str:
    """Validate like Telegram's `parse_mode=HTML`; return the resulting plain text.

    Raises `TelegramHtmlError` when Telegram would answer "can't parse entities" or
    "message text is empty".
    """
    text, _ = scan_telegram_html(html)
    if not text.strip():
        raise TelegramHtmlError("message text is empty")
    return text


def scan_telegram_html(html: str) -> tuple[str, list[Tag]]:
    """Validate `html` and return its plain text plus its tags in document order.

    Unlike `parse_telegram_html` this accepts HTML whose text is empty.
    """
    return _Scanner(html).run()


class _Scanner:
    def __init__(self, html: str) -> None:
        self.html = html
        self.text: list[str] = []
        self.length = 0  # len("".join(self.text)), kept incrementally
        self.tags: list[Tag] = []
        self.stack: list[str] = []

    def run(self) -> tuple[str, list[Tag]]:
        html, i, n = self.html, 0, len(self.html)
        while i < n:
            match = _SPECIAL.search(html, i)
            j = match.start() if match else n
            self._add_text(html[i:j])
            if j == n:
                break
            if html[j] == "&":
                char, i = _decode_entity(html, j)
                self._add_text(char)
            elif html.startswith("</", j):
                i = self._end_tag(j)
            else:
                i = self._start_tag(j)
        if self.stack:
            raise _parse_error(f'Can\'t find end tag corresponding to start tag "{self.stack[-1]}"')
        return "".join(self.text), self.tags

    def _add_text(self, text: str) -> None:
        if text:
            self.text.append(text)
            self.length += len(text)

    def _start_tag(self, begin: int) -> int:
        html, n = self.html, len(self.html)
        i = end = begin + 1
        while end < n and html[end] not in _WHITESPACE and html[end] != ">":
            end += 1
        if end == n:
            raise _parse_error("Unclosed start tag", html, begin)
        name = html[i:end].lower()
        if name not in ALLOWED_TAGS:
            raise _parse_error(f'Unsupported start tag "{name}"', html, begin)
        attributes, i = _parse_attributes(html, name, begin, end)
        self._check_nesting(name, begin)
        _check_attributes(name, attributes, html, begin)
        self.stack.append(name)
        self.tags.append(Tag(self.length, name, html[begin:i], closing=False))
        return i

    def _check_nesting(self, name: str, begin: int) -> None:
        if not self.stack:
            return
        parent = self.stack[-1]
        for outer in self.stack:
            # `pre`/`code` hold plain text only; the one exception is <pre><code class=...>.
            code_inside_pre = outer == "pre" and name == "code" and parent == "pre"
            forbidden = outer in ("pre", "code") and not code_inside_pre
            if forbidden or name in _NO_NESTING.get(outer, frozenset()):
                raise _parse_error(
                    f'Unsupported start tag "{name}" inside "{outer}"', self.html, begin
                )

    def _end_tag(self, begin: int) -> int:
        html = self.html
        if not self.stack:
            raise _parse_error("Unexpected end tag", html, begin)
        end = html.find(">", begin)
        if end < 0:
            raise _parse_error("Unclosed end tag", html, begin)
        name = html[begin + 2 : end].lower()
        expected = self.stack[-1]
        if name and name != expected:  # Telegram accepts `</>` as "close the innermost tag"
            raise _parse_error(
                f"Unmatched end tag at byte offset {_byte_offset(html, begin)}, "
                f'expected "</{expected}>", found "</{name}>"'
            )
        self.stack.pop()
        self.tags.append(Tag(self.length, expected, f"</{expected}>", closing=True))
        return end + 1


def _parse_attributes(html: str, tag: str, begin: int, i: int) -> tuple[dict[str, str], int]:
    """Parse attributes from `i` up to the closing `>`; return them and the index after `>`."""
    n = len(html)
    attributes: dict[str, str] = {}
    while True:
        while i < n and html[i] in _WHITESPACE:
            i += 1
        if i == n:
            raise _parse_error("Unclosed start tag", html, begin)
        if html[i] == ">":
            return attributes, i + 1
        name_start = i
        while i < n and html[i] not in _WHITESPACE and html[i] not in "=>":
            i += 1
        name = html[name_start:i]
        if not name:
            raise _parse_error(f'Empty attribute name in the tag "{tag}"', html, begin)
        while i < n and html[i] in _WHITESPACE:
            i += 1
        if i == n:
            raise _parse_error("Unclosed start tag", html, begin)
        if html[i] != "=":
            if tag == "blockquote" and name == "expandable":
                attributes[name] = ""
                continue
            raise _parse_error(
                f'Expected equal sign in declaration of an attribute of the tag "{tag}"',
                html,
                begin,
            )
        i += 1
        while i < n and html[i] in _WHITESPACE:
            i += 1
        if i == n:
            raise _parse_error("Unclosed start tag", html, begin)
        if html[i] in "\"'":
            close = html.find(html[i], i + 1)
            if close < 0:
                raise _parse_error("Unclosed start tag", html, begin)
            attributes[name] = _decode_text(html, i + 1, close)
            i = close + 1
        else:  # an unquoted name token: letters, digits, periods and hyphens
            value_start = i
            while i < n and html[i].isascii() and (html[i].isalnum() or html[i] in ".-"):
                i += 1
            if i == n or (html[i] not in _WHITESPACE and html[i] != ">"):
                raise _parse_error("Unexpected end of name token", html, value_start)
            attributes[name] = html[value_start:i].lower()


def _check_attributes(tag: str, attributes: dict[str, str], html: str, begin: int) -> None:
    if tag == "a" and not attributes.get("href"):
        raise _parse_error('Tag "a" must have attribute "href"', html, begin)
    if tag == "span" and attributes.get("class") != "tg-spoiler":
        raise _parse_error('Tag "span" must have class "tg-spoiler"', html, begin)
    if tag == "tg-emoji" and not attributes.get("emoji-id", "").isdigit():
        raise _parse_error("Invalid custom emoji identifier specified", html, begin)


def _decode_text(html: str, start: int, end: int) -> str:
    """Decode the entities of an attribute value `html[start:end]`."""
    parts: list[str] = []
    i = start
    while (amp := html.find("&", i, end)) >= 0:
        parts.append(html[i:amp])
        char, i = _decode_entity(html, amp)
        parts.append(char)
    parts.append(html[i:end])
    return "".join(parts)


def _decode_entity(html: str, i: int) -> tuple[str, int]:
    """Decode the entity starting with the `&` at `i`; return its character and the next index."""
    semicolon = html.find(";", i + 1, i + 11)
    body = html[i + 1 : semicolon] if semicolon > 0 else ""
    if body in _NAMED_ENTITIES:
        return _NAMED_ENTITIES[body], semicolon + 1
    code = -1
    if body[:2] == "#x" and len(body) > 2 and all(c in "0123456789abcdefABCDEF" for c in body[2:]):
        code = int(body[2:], 16)
    elif body[:1] == "#" and body[1:].isascii() and body[1:].isdigit():
        code = int(body[1:])
    if 0 < code < 0x110000 and not 0xD800 <= code <= 0xDFFF:
        return chr(code), semicolon + 1
    if (body.isascii() and body.isalpha()) or body[:1] == "#":
        raise _parse_error(f'Unsupported HTML entity "&{body};"', html, i)
    raise _parse_error('Character "&" must be escaped as "&amp;"', html, i)


def _byte_offset(html: str, i: int) -> int:
    return len(html[:i].encode("utf-8", "surrogatepass"))


def _parse_error(detail: str, html: str | None = None, i: int = 0) -> TelegramHtmlError:
    if html is not None:
        detail = f"{detail} at byte offset {_byte_offset(html, i)}"
    return TelegramHtmlError(f"can't parse entities: {detail}")
