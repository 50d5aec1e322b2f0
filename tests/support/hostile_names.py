"""Names people choose to fool the owner, with how each must show; and what a Telegram user sees
of a text the bot sends.

`HOSTILE_NAMES`: (name, what the chat shows of it). Markup, HTML, mentions, links, commands and
tags show as the characters they are; line breaks and control characters as a space, so a name
cannot forge a line of its own; a directional override is dropped; a very long name is cut.

`seen` renders the bot's Markdown as the channel does (`render_messages`), reads the HTML as
Telegram does and finds the entities Telegram would give it (the local Bot API's
`message_entities`); `seen_sent` reads the messages the local Bot API received.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from nanobot_lambda.adapters.telegram.addressing import entity_text
from nanobot_lambda.adapters.telegram.formatting import render_messages
from nanobot_lambda.adapters.telegram.html_check import scan_telegram_html
from nanobot_lambda.core.texts import WORD_JOINER
from nanobot_lambda.operator.local.bot_api import SentMessage
from nanobot_lambda.operator.local.entities import message_entities

HOSTILE_NAMES: list[tuple[str, str]] = [
    ("[click here](http://evil.example/y)", "[click here](http://evil.example/y)"),
    ("**Bob** __the__ _builder_", "**Bob** __the__ _builder_"),
    (
        "<b>Bob</b> <a href='https://evil.example'>x</a>",
        "<b>Bob</b> <a href='https://evil.example'>x</a>",
    ),
    ("@admin", "@admin"),
    ("https://evil.example/login", "https://evil.example/login"),
    ("evil.com", "evil.com"),
    ("bob@evil.example.com", "bob@evil.example.com"),
    ("tg://resolve?domain=admin", "tg://resolve?domain=admin"),
    ("/approve 123456", "/approve 123456"),
    ("#urgent $USD", "#urgent $USD"),
    ("||spoiler|| `code` ~~gone~~ &amp; &lt;", "||spoiler|| `code` ~~gone~~ &amp; &lt;"),
    ("# Owner\n> quote\n1. item", "# Owner > quote 1. item"),
    ("Bob\n- Mallory (@owner), id 1", "Bob - Mallory (@owner), id 1"),
    ("Bob\u202e321 di ,", "Bob321 di ,"),  # the override would turn the id around
    ("\x1b[31mred\x07", "[31mred"),
    ("x" * 300, "x" * 199 + "…"),
]


@dataclass(frozen=True)
class Seen:
    html: str  # the messages as sent, one after another
    text: str  # what the user reads: the word joiners, which show as nothing, left out
    entities: list[tuple[str, str]]  # (type, the text it covers) as Telegram gives them


def seen(markdown: str) -> Seen:
    """What the user sees of `markdown` sent by the bot."""
    parts: list[tuple[str, str, list[tuple[str, str]]]] = []
    for html in render_messages(markdown):
        text, tags = scan_telegram_html(html)
        entities = [
            (entity.type, entity_text(text, entity)) for entity in message_entities(text, tags)
        ]
        parts.append((html, text, entities))
    return _joined(parts)


def seen_sent(messages: Sequence[SentMessage]) -> Seen:
    """What the user sees of the messages the local Bot API received."""
    return _joined(
        [
            (
                m.text,
                m.plain_text,
                [(entity.type, entity_text(m.plain_text, entity)) for entity in m.entities],
            )
            for m in messages
        ]
    )


def _joined(parts: Sequence[tuple[str, str, list[tuple[str, str]]]]) -> Seen:
    return Seen(
        html="\n".join(html for html, _, _ in parts),
        text="\n".join(text for _, text, _ in parts).replace(WORD_JOINER, ""),
        entities=[entity for _, _, entities in parts for entity in entities],
    )
