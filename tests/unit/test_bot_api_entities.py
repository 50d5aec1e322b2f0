"""The entities the local Bot API gives a message, as Telegram does (operator/local/entities.py):
what the HTML marks up, and what Telegram finds in plain text by itself (tdlib's rules), never
inside code, pre or a link; offsets in UTF-16 units."""

from __future__ import annotations

import pytest

from nanobot_lambda.adapters.telegram.addressing import entity_text
from nanobot_lambda.adapters.telegram.html_check import scan_telegram_html
from nanobot_lambda.adapters.telegram.models import MessageEntity
from nanobot_lambda.operator.local.entities import message_entities


def found(html: str) -> list[tuple[str, str]]:
    text, tags = scan_telegram_html(html)
    return [(entity.type, entity_text(text, entity)) for entity in message_entities(text, tags)]


@pytest.mark.parametrize(
    ("text", "entities"),
    [
        ("hi @admin!", [("mention", "@admin")]),
        ("mail@admin @a", []),  # after a word character; one letter is too short
        (
            "/start and /start@nano_lambda_bot",
            [("bot_command", "/start"), ("bot_command", "/start@nano_lambda_bot")],
        ),
        ("a/start 1/2 //x", []),
        ("#tag, #123 a#b #x#y", [("hashtag", "#tag")]),  # digits only; in a word; ends in #
        ("$USD $usd a$EUR $1INCH", [("cashtag", "$USD"), ("cashtag", "$1INCH")]),
        ("see https://evil.example/x?y=1.", [("url", "https://evil.example/x?y=1")]),
        ("evil.com. and HTTP://x.org/a_(b)", [("url", "evil.com"), ("url", "HTTP://x.org/a_(b)")]),
        ("write to bob@evil.example.com", [("email", "bob@evil.example.com")]),
        (
            "tg://resolve?domain=x, xhttps://e.org",
            [("url", "tg://resolve?domain=x"), ("url", "https://e.org")],
        ),
        ("10.5 KB, v1.2, 127.0.0.1", []),  # a domain ends in letters
    ],
)
def test_telegram_finds_mentions_commands_tags_and_links_in_plain_text(
    text: str, entities: list[tuple[str, str]]
) -> None:
    assert found(text.replace("&", "&amp;").replace("<", "&lt;")) == entities


@pytest.mark.parametrize(
    "text",
    [
        "@\u2060admin",
        "/\u2060start",
        "#\u2060tag",
        "$\u2060USD",
        "evil.\u2060com",
        "a@\u2060b.\u2060co",
        "https:/\u2060/\u2060evil.\u2060example/\u2060x",
    ],
)
def test_a_word_joiner_after_the_mark_leaves_plain_text(text: str) -> None:
    """As tdlib: the joiner is no word, domain or URL character (how texts.literal shows names)."""
    assert found(text) == []


def test_markup_gives_its_entities_and_nothing_is_found_inside_code_pre_or_links() -> None:
    html = (
        "<b>bold @admin</b> <i>it</i> <code>@admin /start</code> "
        '<pre><code class="language-py">evil.com</code></pre> '
        '<a href="https://y.org">#tag</a> <a href="tg://user?id=1">Ada</a> '
        "<blockquote expandable>q</blockquote> <tg-spoiler>s</tg-spoiler>"
    )
    assert found(html) == [
        ("bold", "bold @admin"),
        ("mention", "@admin"),  # formatting leaves finding alone
        ("italic", "it"),
        ("code", "@admin /start"),
        ("pre", "evil.com"),
        ("text_link", "#tag"),
        ("text_mention", "Ada"),
        ("expandable_blockquote", "q"),
        ("spoiler", "s"),
    ]


def test_offsets_and_lengths_count_utf16_units() -> None:
    text = "😀 @admin <b>é😀</b>"
    plain, tags = scan_telegram_html(text)
    entities = message_entities(plain, tags)
    assert entities == (
        MessageEntity(type="mention", offset=3, length=6),
        MessageEntity(type="bold", offset=10, length=3),
    )
