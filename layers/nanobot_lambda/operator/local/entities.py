"""The entities Telegram attaches to a message the bot sends, for the local Bot API.

A message's entities are what its markup forms (bold, a link, code...) and what Telegram finds
in its plain text by itself, markup or not: `@name` mentions, `#tag` hashtags, `$USD` cashtags,
`/command` bot commands (tapping one sends it), URLs with or without a scheme (`tg://` ones
too), and email addresses. The finding follows tdlib's MessageEntity.cpp (match_mentions,
match_bot_commands, match_hashtags, match_cashtags, match_tg_urls, match_urls and
is_url_unicode_symbol), as regular expressions that err towards finding more: any top-level
domain of two letters or more counts (tdlib keeps a list), and a command followed by a too
short `@bot` still counts. Nothing is found inside code, pre or a link, which tdlib leaves
alone. Phone and bank card numbers are not looked for. The expressions never backtrack far
(possessive runs, a lookbehind at every start), so a 4096-character text is read in
milliseconds whatever it holds.

Offsets and lengths are in UTF-16 code units, as the Bot API gives them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from itertools import accumulate

from nanobot_lambda.adapters.telegram.html_check import Tag, tag_attributes
from nanobot_lambda.adapters.telegram.models import MessageEntity

_FORMATTING = {
    "b": "bold",
    "strong": "bold",
    "i": "italic",
    "em": "italic",
    "u": "underline",
    "ins": "underline",
    "s": "strikethrough",
    "strike": "strikethrough",
    "del": "strikethrough",
    "span": "spoiler",
    "tg-spoiler": "spoiler",
    "tg-emoji": "custom_emoji",
    "code": "code",
    "pre": "pre",
    "blockquote": "blockquote",
    "a": "text_link",
}
_Span = tuple[str, int, int, str | None]  # type, start, end (code points), a link's URL
_OPAQUE = frozenset({"code", "pre", "text_link", "text_mention"})  # nothing is found inside

# tdlib's is_word_character is a letter, a number or `_`: Python's \w. Its hashtag letters add
# ZWNJ, the middle dot and Sinhala.
_HASHTAG_LETTERS = r"\w\u200c\u00b7\u0d80-\u0dff"
# Outside ASCII, a domain, user or path character is anything but a separator and General
# Punctuation (U+2000-U+206F, the word joiner among them) other than ZWNJ, ZWJ and dashes.
_UNICODE_URL = r"\u00c0-\u167f\u1681-\u1fff\u200c\u200d\u2010-\u2015\u2070-\u2fff\u3001-\U0010ffff"
_DOMAIN = rf"[A-Za-z0-9_~\-{_UNICODE_URL}]"
_USER = rf"[A-Za-z0-9_~\-.!#$%&*+,:;=?^|{_UNICODE_URL}]"
_PATH = rf"[!#-;=?-~{_UNICODE_URL}]"  # printable ASCII but space, quotes < and >
_PATH_END = ".:;,('?!`"  # trimmed from the end of a URL

_PATTERNS = (
    ("mention", re.compile(r"(?<!\w)@[A-Za-z0-9_]{2,32}(?!\w)")),
    (
        "bot_command",
        re.compile(r"(?<![\w/<>])/[A-Za-z0-9_]{1,64}(?:@[A-Za-z0-9_]{3,32})?(?![\w/<>])"),
    ),
    (
        "hashtag",
        re.compile(
            rf"(?<![{_HASHTAG_LETTERS}])#(?=[{_HASHTAG_LETTERS}]*[^\W\d_])[{_HASHTAG_LETTERS}]++(?!#)"
        ),
    ),
    (
        "cashtag",
        re.compile(rf"(?<![${_HASHTAG_LETTERS}])\$(?:1INCH|[A-Z]{{1,8}})(?![${_HASHTAG_LETTERS}])"),
    ),
)
# A URL: a scheme, or no word character, slash, hash, at sign or dot just before; perhaps user
# data and `@`; labels ending in dots and a top-level domain of letters; a port; a path.
_URL = re.compile(
    rf"(?P<scheme>(?i:https?|ftp|tonsite)://)?(?(scheme)|(?<![\w/#@.~\-]))"
    rf"(?P<user>{_USER}++@)?(?:{_DOMAIN}++\.)+[^\W\d_]{{2,}}+"
    rf"(?P<port>:[0-9]{{1,5}}(?![0-9]))?(?P<path>[/?#]{_PATH}*+)?"
)
_TG_URL = re.compile(
    rf"(?P<scheme>(?i:tg|ton|tonsite)://)[A-Za-z0-9_\-]{{1,253}}(?P<path>[/?#]{_PATH}*+)?"
)


def message_entities(text: str, tags: Sequence[Tag] = ()) -> tuple[MessageEntity, ...]:
    """The entities of a message whose plain text is `text` and whose HTML had `tags`
    (`scan_telegram_html`; none for a message without parse_mode), in text order."""
    spans = _formatting(tags)
    opaque = [(start, end) for kind, start, end, _ in spans if kind in _OPAQUE]
    found: list[_Span] = [
        (kind, start, end, None)
        for kind, start, end in _found(text)
        if not any(start < until and since < end for since, until in opaque)
    ]
    units = list(accumulate((2 if ord(char) > 0xFFFF else 1 for char in text), initial=0))
    return tuple(
        MessageEntity(type=kind, offset=units[start], length=units[end] - units[start], url=url)
        for kind, start, end, url in sorted(spans + found, key=lambda span: span[1:3])
        if end > start
    )


def _formatting(tags: Sequence[Tag]) -> list[_Span]:
    """What the tags mark up; code inside pre is the pre's."""
    spans: list[_Span] = []
    open_tags: list[Tag] = []
    for tag in tags:
        if not tag.closing:
            open_tags.append(tag)
            continue
        start = open_tags.pop()
        if start.name == "code" and open_tags and open_tags[-1].name == "pre":
            continue
        kind, url = _FORMATTING[start.name], None
        if kind == "text_link":
            url = tag_attributes(start)["href"]
            if url.startswith("tg://user?id="):  # the Bot API names the user, not the URL
                kind, url = "text_mention", None
        elif kind == "blockquote" and "expandable" in tag_attributes(start):
            kind = "expandable_blockquote"
        spans.append((kind, start.pos, tag.pos, url))
    return spans


def _found(text: str) -> list[tuple[str, int, int]]:
    """What Telegram finds in plain text: (type, start, end) in code points."""
    found = [
        (kind, match.start(), match.end())
        for kind, pattern in _PATTERNS
        for match in pattern.finditer(text)
    ]
    for match in [*_URL.finditer(text), *_TG_URL.finditer(text)]:
        end = match.end()
        if match["path"]:
            while end > match.start("path") + 1 and text[end - 1] in _PATH_END:
                end -= 1
        email = (
            match.re is _URL
            and match["user"]
            and not (match["scheme"] or match["port"] or match["path"])
        )
        found.append(("email" if email else "url", match.start(), end))
    return found
