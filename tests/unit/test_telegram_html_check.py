"""The Telegram HTML checker: accepts what the Bot API accepts, rejects what it rejects."""

from __future__ import annotations

import pytest

from nanobot_lambda.adapters.telegram.html_check import (
    Tag,
    TelegramHtmlError,
    parse_telegram_html,
    scan_telegram_html,
    telegram_length,
)

# The example from https://core.telegram.org/bots/api#html-style
BOT_API_EXAMPLE = """<b>bold</b>, <strong>bold</strong>
<i>italic</i>, <em>italic</em>
<u>underline</u>, <ins>underline</ins>
<s>strikethrough</s>, <strike>strikethrough</strike>, <del>strikethrough</del>
<span class="tg-spoiler">spoiler</span>, <tg-spoiler>spoiler</tg-spoiler>
<b>bold <i>italic bold <s>italic bold strikethrough <span class="tg-spoiler">italic bold \
strikethrough spoiler</span></s> <u>underline italic bold</u></i> bold</b>
<a href="http://www.example.com/">inline URL</a>
<a href="tg://user?id=123456789">inline mention of a user</a>
<tg-emoji emoji-id="5368324170671202286">👍</tg-emoji>
<code>inline fixed-width code</code>
<pre>pre-formatted fixed-width code block</pre>
<pre><code class="language-python">pre-formatted fixed-width code block written in the \
Python programming language</code></pre>
<blockquote>Block quotation started\nBlock quotation continued\nThe last line of the block \
quotation</blockquote>
<blockquote expandable>Expandable block quotation started\nExpandable block quotation \
continued\nExpandable block quotation continued\nHidden by default part of the block \
quotation started\nExpandable block quotation continued\nThe last line of the block \
quotation</blockquote>"""


def test_accepts_the_bot_api_documentation_example() -> None:
    text = parse_telegram_html(BOT_API_EXAMPLE)
    assert text.startswith("bold, bold\nitalic, italic\n")
    assert "<" not in text
    assert "inline mention of a user\n👍\ninline fixed-width code" in text


@pytest.mark.parametrize(
    ("html", "text"),
    [
        ("<b>x</b>", "x"),
        ("<strong>x</strong>", "x"),
        ("<i>x</i>", "x"),
        ("<em>x</em>", "x"),
        ("<u>x</u>", "x"),
        ("<ins>x</ins>", "x"),
        ("<s>x</s>", "x"),
        ("<strike>x</strike>", "x"),
        ("<del>x</del>", "x"),
        ('<span class="tg-spoiler">x</span>', "x"),
        ("<tg-spoiler>x</tg-spoiler>", "x"),
        ('<a href="https://example.com/a_b?x=1&amp;y=2">x</a>', "x"),
        ("<a href='https://example.com/'>x</a>", "x"),
        ('<a href="tg://user?id=123456789">x</a>', "x"),
        ('<a href="mailto:ada@example.com">x</a>', "x"),
        ('<tg-emoji emoji-id="5368324170671202286">👍</tg-emoji>', "👍"),
        ("<code>x</code>", "x"),
        ("<pre>x</pre>", "x"),
        ("<pre><code>x</code></pre>", "x"),
        ('<pre><code class="language-python">x</code></pre>', "x"),
        ("<pre><code class=language-python>x</code></pre>", "x"),
        ("<blockquote>x</blockquote>", "x"),
        ("<blockquote expandable>x</blockquote>", "x"),
        ("<B>x</B>", "x"),  # tag names are case-insensitive
        ("<b >x</b>", "x"),
        ("<b>x</>", "x"),  # Telegram closes the innermost tag on `</>`
        ("<b><b>x</b></b>", "x"),
        ("<b>bold <code>code</code></b>", "bold code"),
        ('<a href="https://x.org"><b>x</b> <code>y</code></a>', "x y"),
        ("<blockquote><pre>x</pre></blockquote>", "x"),
        ("<b></b>x", "x"),
        ("a > b", "a > b"),  # Telegram tolerates a stray '>'
        ("&lt;&gt;&amp;&quot;", '<>&"'),
        ("&#39;&#x1F600;&#128512;", "'😀😀"),
        ("line 1\n\nline 2", "line 1\n\nline 2"),
    ],
)
def test_accepts_allowed_forms(html: str, text: str) -> None:
    assert parse_telegram_html(html) == text


def test_attribute_entities_are_decoded() -> None:
    _, tags = scan_telegram_html('<a href="https://x.org/?a=1&amp;b=&quot;2&quot;">x</a>')
    assert tags[0].raw == '<a href="https://x.org/?a=1&amp;b=&quot;2&quot;">'


def test_scan_reports_tags_at_text_positions() -> None:
    text, tags = scan_telegram_html("a<b>b&amp;<i>c</i></b>d")
    assert text == "ab&cd"
    assert tags == [
        Tag(1, "b", "<b>", closing=False),
        Tag(3, "i", "<i>", closing=False),
        Tag(4, "i", "</i>", closing=True),
        Tag(4, "b", "</b>", closing=True),
    ]


@pytest.mark.parametrize(
    ("html", "message"),
    [
        ("<div>x</div>", 'Unsupported start tag "div" at byte offset 0'),
        ("x <script>alert(1)</script>", 'Unsupported start tag "script" at byte offset 2'),
        ("a<br>b", 'Unsupported start tag "br" at byte offset 1'),
        ("a<br/>b", 'Unsupported start tag "br/" at byte offset 1'),
        ("<p>x</p>", 'Unsupported start tag "p" at byte offset 0'),
        ("a < b", 'Unsupported start tag "" at byte offset 2'),
        ("1<2", "Unclosed start tag at byte offset 1"),
        ("<b", "Unclosed start tag at byte offset 0"),
        ('<a href="https://x.org>x</a>', "Unclosed start tag at byte offset 0"),
        ("<b>x", 'Can\'t find end tag corresponding to start tag "b"'),
        ("<b><i>x</i>", 'Can\'t find end tag corresponding to start tag "b"'),
        (
            "<b><i>x</b></i>",
            'Unmatched end tag at byte offset 7, expected "</i>", found "</b>"',
        ),
        ("x</b>", "Unexpected end tag at byte offset 1"),
        ("<b>x</b></b>", "Unexpected end tag at byte offset 8"),
        ("<b>x</b", "Unclosed end tag at byte offset 4"),
        ("a & b", 'Character "&" must be escaped as "&amp;" at byte offset 2'),
        ("AT&T", 'Character "&" must be escaped as "&amp;" at byte offset 2'),
        ("&amp", 'Character "&" must be escaped as "&amp;" at byte offset 0'),
        ("a&nbsp;b", 'Unsupported HTML entity "&nbsp;" at byte offset 1'),
        ("&copy;", 'Unsupported HTML entity "&copy;" at byte offset 0'),
        ("&#0;", 'Unsupported HTML entity "&#0;" at byte offset 0'),
        ("&#xD800;", 'Unsupported HTML entity "&#xD800;" at byte offset 0'),
        ("&#x110000;", 'Unsupported HTML entity "&#x110000;" at byte offset 0'),
        ('<a href="x?a=1&b=2">x</a>', 'Character "&" must be escaped as "&amp;"'),
        ("<a>x</a>", 'Tag "a" must have attribute "href" at byte offset 0'),
        ('<a href="">x</a>', 'Tag "a" must have attribute "href" at byte offset 0'),
        ("<a href>x</a>", 'Expected equal sign in declaration of an attribute of the tag "a"'),
        ("<a =x>x</a>", 'Empty attribute name in the tag "a" at byte offset 0'),
        ("<a href=x?y>x</a>", "Unexpected end of name token at byte offset 8"),
        ("<span>x</span>", 'Tag "span" must have class "tg-spoiler" at byte offset 0'),
        ('<span class="x">x</span>', 'Tag "span" must have class "tg-spoiler"'),
        ("<tg-emoji>👍</tg-emoji>", "Invalid custom emoji identifier specified"),
        ('<tg-emoji emoji-id="abc">👍</tg-emoji>', "Invalid custom emoji identifier specified"),
        ("<code><pre>x</pre></code>", 'Unsupported start tag "pre" inside "code"'),
        ("<code><b>x</b></code>", 'Unsupported start tag "b" inside "code"'),
        ("<pre><b>x</b></pre>", 'Unsupported start tag "b" inside "pre"'),
        ("<pre><pre>x</pre></pre>", 'Unsupported start tag "pre" inside "pre"'),
        ("<pre><code><b>x</b></code></pre>", 'Unsupported start tag "b" inside "pre"'),
        ("<pre><i><code>x</code></i></pre>", 'Unsupported start tag "i" inside "pre"'),
        ("<blockquote><blockquote>x</blockquote></blockquote>", 'start tag "blockquote" inside'),
        ('<a href="https://a"><a href="https://b">x</a></a>', 'Unsupported start tag "a" inside'),
        ("<blockquote foo>x</blockquote>", "Expected equal sign in declaration"),
    ],
)
def test_rejects_like_telegram(html: str, message: str) -> None:
    with pytest.raises(TelegramHtmlError) as caught:
        parse_telegram_html(html)
    assert str(caught.value).startswith("can't parse entities: ")
    assert message in str(caught.value)


@pytest.mark.parametrize(("prefix", "offset"), [("é", 2), ("😀", 4), ("中文", 6), ("ab", 2)])
def test_error_offsets_are_utf8_bytes(prefix: str, offset: int) -> None:
    with pytest.raises(TelegramHtmlError, match=f"byte offset {offset}$"):
        parse_telegram_html(f"{prefix}<div>")


@pytest.mark.parametrize("html", ["", "   ", "\n\n", "<b></b>", "<b> </b>\n<i></i>"])
def test_rejects_empty_text(html: str) -> None:
    with pytest.raises(TelegramHtmlError) as caught:
        parse_telegram_html(html)
    assert str(caught.value) == "message text is empty"


def test_scan_accepts_empty_text() -> None:
    assert scan_telegram_html("<b></b>") == (
        "",
        [Tag(0, "b", "<b>", closing=False), Tag(0, "b", "</b>", closing=True)],
    )


def test_error_is_a_value_error() -> None:
    assert issubclass(TelegramHtmlError, ValueError)


@pytest.mark.parametrize(
    ("text", "length"),
    [("", 0), ("abc", 3), ("é", 1), ("中文", 2), ("😀", 2), ("👍🏽", 4), ("a😀b", 4)],
)
def test_telegram_length_counts_utf16_units(text: str, length: int) -> None:
    assert telegram_length(text) == length


def test_a_megabyte_of_html_is_parsed() -> None:
    # Its speed is measured by bench/telegram_text.py.
    html = "<b>bold &amp; <i>it</i></b> plain &lt;text&gt; 😀\n" * 20_000  # ~1 MB
    text = parse_telegram_html(html)
    assert text.count("bold & it plain <text> 😀\n") == 20_000
