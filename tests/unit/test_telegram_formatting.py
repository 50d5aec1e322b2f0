"""Markdown -> Telegram HTML rendering and splitting into messages."""

from __future__ import annotations

import json
import random
from itertools import accumulate
from pathlib import Path
from typing import Any

import pytest
import regex

from nanobot_lambda.adapters.telegram.formatting import (
    TELEGRAM_TEXT_LIMIT,
    html_to_plain_text,
    markdown_to_telegram_html,
    render_messages,
    split_telegram_html,
)
from nanobot_lambda.adapters.telegram.html_check import (
    TelegramHtmlError,
    parse_telegram_html,
    telegram_length,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "telegram"
PY_OPEN = '<pre><code class="language-python">'


def render(markdown: str) -> str:
    """Render and check the output is something Telegram accepts."""
    html = markdown_to_telegram_html(markdown)
    parse_telegram_html(html)
    assert html == html.rstrip()
    return html


def squash(text: str) -> str:
    return "".join(text.split())


def check_chunks(html: str, chunks: list[str], limit: int) -> None:
    """The invariants every split must keep."""
    assert chunks
    for chunk in chunks:
        text = parse_telegram_html(chunk)  # valid on its own, not empty
        assert telegram_length(text) <= limit
        assert text.strip()
        assert html_to_plain_text(chunk) == text
        chunk.encode("utf-8")  # no lone surrogates
    joined = "".join(parse_telegram_html(chunk) for chunk in chunks)
    assert squash(joined) == squash(parse_telegram_html(html))


# --- inline formatting --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("markdown", "html"),
    [
        ("**bold**", "<b>bold</b>"),
        ("__bold__", "<b>bold</b>"),
        ("*em* and _em_", "<i>em</i> and <i>em</i>"),
        ("~~gone~~", "<s>gone</s>"),
        ("***both***", "<i><b>both</b></i>"),
        ("**bold _it_ bold**", "<b>bold <i>it</i> bold</b>"),
        ("*it **bold** it*", "<i>it <b>bold</b> it</i>"),
        ("**~~both~~**", "<b><s>both</s></b>"),
        ("`code`", "<code>code</code>"),
        ("**`code` in bold**", "<b><code>code</code> in bold</b>"),
        ("snake_case_name and 2 * 3 * 4", "snake_case_name and 2 * 3 * 4"),
        (r"\*not em\*", "*not em*"),
    ],
)
def test_inline_formatting(markdown: str, html: str) -> None:
    assert render(markdown) == html


def test_special_characters_are_escaped_in_text() -> None:
    assert render("a < b > c & d") == "a &lt; b &gt; c &amp; d"
    assert render("AT&T &amp; &copy; &#x1F600;") == "AT&amp;T &amp; © 😀"


def test_special_characters_are_escaped_in_inline_code() -> None:
    assert render("`if a < b && c > d:`") == "<code>if a &lt; b &amp;&amp; c &gt; d:</code>"
    assert render("`</code></pre>`") == "<code>&lt;/code&gt;&lt;/pre&gt;</code>"


def test_html_in_markdown_is_shown_as_text() -> None:
    assert render("<b>not bold</b>") == "&lt;b&gt;not bold&lt;/b&gt;"
    assert render("x <br> y <script>alert(1)</script>") == (
        "x &lt;br&gt; y &lt;script&gt;alert(1)&lt;/script&gt;"
    )
    block = render('<div class="x">\nhello\n</div>')
    assert block == '&lt;div class="x"&gt;\nhello\n&lt;/div&gt;'
    assert parse_telegram_html(block) == '<div class="x">\nhello\n</div>'


def test_think_like_model_output_is_escaped() -> None:
    answer = "<think>\nThe user wants **X** & maybe <Y>.\n</think>\n\nHere is **X**."
    html = render(answer)
    assert "<think>" not in html
    assert "&lt;think&gt;" in html
    assert "<b>X</b>" in html
    text = parse_telegram_html(html)
    assert "<think>" in text and "& maybe <Y>." in text


def test_breaks_become_newlines() -> None:
    assert render("one\ntwo") == "one\ntwo"  # soft break
    assert render("one  \ntwo") == "one\ntwo"  # hard break (two spaces)
    assert render("one\\\ntwo") == "one\ntwo"  # hard break (backslash)
    assert render("first paragraph\n\n\n\nsecond") == "first paragraph\n\nsecond"


# --- links and images ---------------------------------------------------------------------


def test_link_keeps_underscores_and_escapes_ampersand() -> None:
    html = render("[docs](https://example.com/a_b_c?x=1&y=2)")
    assert html == '<a href="https://example.com/a_b_c?x=1&amp;y=2">docs</a>'


def test_bare_urls_stay_intact() -> None:
    html = render("See https://example.com/a_b_c?x=1&y=2 and https://x.org/__init__.py.")
    assert html == (
        'See <a href="https://example.com/a_b_c?x=1&amp;y=2">'
        "https://example.com/a_b_c?x=1&amp;y=2</a> and "
        '<a href="https://x.org/__init__.py">https://x.org/__init__.py</a>.'
    )


def test_bare_url_punctuation_and_parentheses() -> None:
    html = render("(see https://en.wikipedia.org/wiki/Foo_(bar)), **https://x.org/a_b**!")
    assert '<a href="https://en.wikipedia.org/wiki/Foo_(bar)">' in html
    assert html.endswith('<b><a href="https://x.org/a_b">https://x.org/a_b</a></b>!')
    assert parse_telegram_html(html).startswith("(see https://en.wikipedia.org/wiki/Foo_(bar)),")


def test_bare_url_needs_a_scheme_boundary() -> None:
    assert render("xhttps://x.org/_a_") == "xhttps://x.org/<i>a</i>"
    assert render("`https://x.org/__a__`") == "<code>https://x.org/__a__</code>"


def test_autolinks_and_allowed_schemes() -> None:
    assert render("<https://x.org/a_b>") == '<a href="https://x.org/a_b">https://x.org/a_b</a>'
    assert render("[me](tg://user?id=42)") == '<a href="tg://user?id=42">me</a>'
    assert render("<ada@example.com>") == ('<a href="mailto:ada@example.com">ada@example.com</a>')
    assert render("[HTTP](HTTP://X.ORG)") == '<a href="HTTP://X.ORG">HTTP</a>'


def test_other_urls_are_shown_as_text() -> None:
    assert render("[the file](/tmp/report_1.pdf)") == "the file (/tmp/report_1.pdf)"
    assert render("[ftp](ftp://x.org/f)") == "ftp (ftp://x.org/f)"
    assert render("[top](#intro)") == "top (#intro)"
    assert render("<ftp://x.org/f>") == "ftp://x.org/f"
    # markdown-it refuses javascript: links, so the source stays text
    assert render("[x](javascript:alert(1))") == "[x](javascript:alert(1))"


def test_link_with_formatting_and_empty_text() -> None:
    assert render("[**bold** `code`](https://x.org)") == (
        '<a href="https://x.org"><b>bold</b> <code>code</code></a>'
    )
    assert render("[](https://x.org)") == '<a href="https://x.org">https://x.org</a>'


def test_images_become_links() -> None:
    assert render("![a cat](https://x.org/cat_1.png)") == (
        '<a href="https://x.org/cat_1.png">a cat</a>'
    )
    assert render("![](https://x.org/c.png)") == '<a href="https://x.org/c.png">image</a>'
    assert render("![cat](cat.png)") == "cat (cat.png)"
    # an image inside a link: Telegram can't nest links, keep the outer one
    assert render("[![cat](https://x.org/c.png)](https://x.org)") == (
        '<a href="https://x.org">cat</a>'
    )


# --- blocks -------------------------------------------------------------------------------


def test_headings_are_bold_lines() -> None:
    assert render("# Title *x*\nText\n## Sub\n\nMore") == (
        "<b>Title <i>x</i></b>\n\nText\n\n<b>Sub</b>\n\nMore"
    )
    assert render("Setext\n======") == "<b>Setext</b>"


def test_fenced_code_with_language() -> None:
    markdown = '```python\nif a < b and c > d:\n    print("x & y")\n```'
    assert render(markdown) == (
        f'{PY_OPEN}if a &lt; b and c &gt; d:\n    print("x & y")</code></pre>'.replace(
            "x & y", "x &amp; y"
        )
    )


def test_fenced_code_without_language_and_indented_code() -> None:
    assert render("```\n<b>&amp;</b>\n```") == "<pre>&lt;b&gt;&amp;amp;&lt;/b&gt;</pre>"
    assert render("text\n\n    indented\n      more") == "text\n\n<pre>indented\n  more</pre>"


def test_code_language_is_an_escaped_attribute() -> None:
    html = render('```c++ {title="a&b"}\nint x;\n```')
    assert html == '<pre><code class="language-c++">int x;</code></pre>'
    assert render('```a"<b>\nx\n```') == (
        '<pre><code class="language-a&quot;&lt;b&gt;">x</code></pre>'
    )


def test_empty_code_block_is_dropped() -> None:
    assert render("before\n\n```\n\n```\n\nafter") == "before\n\nafter"


def test_bullet_and_nested_lists() -> None:
    markdown = "- one\n- two\n  - two.a\n    - deep\n  - two.b\n- three"
    assert render(markdown) == "• one\n• two\n  • two.a\n    • deep\n  • two.b\n• three"


def test_ordered_lists_keep_numbers() -> None:
    assert render("1. a\n2. b\n3. c") == "1. a\n2. b\n3. c"
    assert render("3. c\n4. d") == "3. c\n4. d"
    assert render("1) a\n2) b") == "1) a\n2) b"
    assert render("1. a\n   - x\n   - y\n2. b") == "1. a\n  • x\n  • y\n2. b"


def test_loose_list_and_item_continuation() -> None:
    assert render("- a\n\n- b\n  still b") == "• a\n\n• b\n  still b"
    assert render("Intro:\n- a\n- b\n\nOutro") == "Intro:\n\n• a\n• b\n\nOutro"
    assert render("-\n- x") == "•\n• x"


def test_code_inside_a_list_is_not_indented() -> None:
    html = render("- step:\n\n  ```sh\n  cd x\n    indented\n  ```\n- next")
    assert html == (
        '• step:\n<pre><code class="language-sh">cd x\n  indented</code></pre>\n\n• next'
    )


def test_blockquote() -> None:
    assert render("> quoted *text*\n> more\n\nafter") == (
        "<blockquote>quoted <i>text</i>\nmore</blockquote>\n\nafter"
    )
    assert render("> para 1\n>\n> - item") == "<blockquote>para 1\n\n• item</blockquote>"


def test_nested_blockquotes_are_flattened() -> None:
    assert render("> outer\n>\n> > inner") == "<blockquote>outer\n\ninner</blockquote>"


def test_table_is_an_aligned_pre_block() -> None:
    markdown = (
        "| Name | Qty | Note |\n|:-----|----:|:----:|\n| apple | 3 | a & b |\n| kiwi | 12 | `x` |"
    )
    assert render(markdown) == (
        "<pre>"
        "Name  | Qty | Note\n"
        "------+-----+------\n"
        "apple |   3 | a &amp; b\n"
        "kiwi  |  12 |   x"
        "</pre>"
    )


def test_table_counts_wide_characters_as_two_columns() -> None:
    html = render("| 名前 | n |\n|---|---|\n| 😀 | 1 |\n| ab | 2 |")
    assert parse_telegram_html(html).split("\n") == ["名前 | n", "-----+--", "😀   | 1", "ab   | 2"]


def test_horizontal_rule() -> None:
    assert render("above\n\n---\n\nbelow") == "above\n\n———\n\nbelow"
    assert render("***") == "———"


def test_unicode_is_preserved() -> None:
    assert render("记住：我喜欢**黑啤炖牛肉** 🍺 👍🏽 Ελληνικά") == (
        "记住：我喜欢<b>黑啤炖牛肉</b> 🍺 👍🏽 Ελληνικά"
    )


@pytest.mark.parametrize(
    ("markdown", "html"),
    [
        ("边界：**社区显示：**Fable", "边界：<b>社区显示：</b>Fable"),
        ("- **开源：**代码", "• <b>开源：</b>代码"),
        ("**重要：**これは", "<b>重要：</b>これは"),
        ("한국어**강조：**입니다", "한국어<b>강조：</b>입니다"),
        ("中文**（括号）**中文", "中文<b>（括号）</b>中文"),
        ("他说*注意：*这里", "他说<i>注意：</i>这里"),
        ("中文~~删除：~~文字", "中文<s>删除：</s>文字"),
        ("**注意：*斜体：*结束。**好", "<b>注意：<i>斜体：</i>结束。</b>好"),
    ],
)
def test_emphasis_next_to_cjk_punctuation(markdown: str, html: str) -> None:
    assert render(markdown) == html


@pytest.mark.parametrize(
    ("markdown", "html"),
    [
        ("**foo**bar", "<b>foo</b>bar"),
        ("**Note:**text", "**Note:**text"),
        ("foo**:bar**", "foo**:bar**"),
        ("foo**😀bar**", "foo**😀bar**"),  # an emoji is wide but not CJK
        ("2*3*4", "2<i>3</i>4"),
        ("a ** b ** c", "a ** b ** c"),
        ("snake_case_name", "snake_case_name"),
        ("中文_强调：_中文 and 中_文_字", "中文_强调：_中文 and 中_文_字"),
        ("__开源：__代码", "__开源：__代码"),
        ("中 ** 文 **", "中 ** 文 **"),
    ],
)
def test_emphasis_without_cjk_neighbours_follows_commonmark(markdown: str, html: str) -> None:
    assert render(markdown) == html


def test_code_next_to_cjk_is_untouched() -> None:
    assert render("看`**代码：**x`这里") == "看<code>**代码：**x</code>这里"
    assert render("```\n边界：**社区显示：**Fable\n```") == "<pre>边界：**社区显示：**Fable</pre>"


def test_blank_input() -> None:
    assert markdown_to_telegram_html("") == ""
    assert markdown_to_telegram_html(" \n\t\n") == ""
    assert render_messages("") == []
    assert render_messages("  \n\n ") == []
    # Non-blank Markdown that renders to nothing (an empty fence) is shown as written.
    assert render_messages("```\n\n```") == ["```\n\n```"]


def test_content_beyond_markdown_it_nesting_is_not_lost() -> None:
    html = render(">" * 60 + " deep")
    assert "deep" in parse_telegram_html(html)


def test_deep_emphasis_does_not_recurse() -> None:
    html = render("*" * 3000 + "x" + "*" * 3000)
    assert parse_telegram_html(html) == "x"


def test_no_trailing_whitespace() -> None:
    for markdown in ["text   ", "- a\n-", "> q\n\n", "```\ncode   \n```\n\n\n", "a  \n"]:
        html = markdown_to_telegram_html(markdown)
        assert html == html.strip(), markdown


MODEL_ANSWER = """## Plan for *tomorrow*

Here's what I found (sources: https://example.com/a_b_c?x=1&y=2):

1. **Wake up** at 7:00 — _no snooze_!
2. Check `~/notes/todo_list.md` for items with `<priority>` tags
   - call Ada & Bob
   - review [PR #42](https://github.com/org/repo/pull/42)
3. Run the script:

```python
def f(a: int, b: int) -> bool:
    return a < b and b > 0  # "quoted" & escaped
```

> **Note:** the weather API said 30% chance of rain 🌧️.

| Task | When |
|------|------|
| Gym  | 8:00 |
| 读书  | 21:00 |

---
That's all. <b>Not bold</b>, 1 < 2 && 3 > 2.
"""


def test_realistic_model_answer() -> None:
    html = render(MODEL_ANSWER)
    assert html.startswith("<b>Plan for <i>tomorrow</i></b>\n\n")
    assert '<a href="https://example.com/a_b_c?x=1&amp;y=2">' in html
    assert "1. <b>Wake up</b> at 7:00 — <i>no snooze</i>!" in html
    assert "<code>&lt;priority&gt;</code>" in html
    assert "\n  • call Ada &amp; Bob\n" in html
    assert f"{PY_OPEN}def f(a: int, b: int) -&gt; bool:\n    return a &lt; b" in html
    assert "<blockquote><b>Note:</b> the weather API" in html
    assert "———" in html
    assert html.endswith("That's all. &lt;b&gt;Not bold&lt;/b&gt;, 1 &lt; 2 &amp;&amp; 3 &gt; 2.")


TRICKY = [
    "***both*** **bold _it_ bold** ~~**x**~~",
    "a<b>c</b>&amp;&lt;&#x27;&nbsp;&",
    "`a`b`c` ``d`e`` ```f```",
    "[a](<https://x.org/a b>) [b](https://x.org 'title') [c][ref]\n\n[ref]: https://y.org",
    "* a\n\n  b\n\n  > c\n  > ```\n  > code\n  > ```\n* d",
    "> - a\n>   1. b\n>      > c\n>      > ```js\n>      > x\n>      > ```",
    "| a |\n|---|\n| <b> |\n| `|` |",
    "Header\n---\n\n***\n\n___",
    "<details><summary>x</summary>\n\ny\n</details>",
    "line with trailing backslash \\",
    "\x00 null and \u200b zero width",
    "![a **b** `c`](https://x.org/i.png 'title')",
    "https://x.org/a_b_(c)_d?e=f&g=h#i_j)",
    "#not-a-heading and # heading\n# real",
    "1. a\n1. b\n10. c",
    "- [ ] task\n- [x] done",
    "```\nunterminated fence\n<tag>",
    "~~~\ntilde fence\n~~~",
    "*unclosed **emphasis _everywhere",
]


@pytest.mark.parametrize("markdown", TRICKY)
def test_tricky_markdown_renders_valid_html(markdown: str) -> None:
    render(markdown)
    for chunk in render_messages(markdown, limit=10):
        assert telegram_length(parse_telegram_html(chunk)) <= 10


def _texts(value: Any) -> list[str]:
    if isinstance(value, dict):
        found = [v for k, v in value.items() if k in ("text", "caption") and isinstance(v, str)]
        return found + [
            t for k, v in value.items() if k not in ("text", "caption") for t in _texts(v)
        ]
    if isinstance(value, list):
        return [t for v in value for t in _texts(v)]
    return []


def test_fixture_texts_render_to_valid_html() -> None:
    texts = [
        t for path in sorted(FIXTURES.glob("*.json")) for t in _texts(json.loads(path.read_text()))
    ]
    assert len(texts) >= 10
    for text in texts:
        html = render(text)
        chunks = render_messages(text)
        assert chunks == [html]
        assert squash(html_to_plain_text(html)) == squash(text.replace("•", ""))


def test_fixture_with_html_looking_text() -> None:
    update = json.loads((FIXTURES / "unicode_text.json").read_text())
    html = render(update["message"]["text"])
    assert "&lt;b&gt;not html&lt;/b&gt; &amp; co" in html
    assert parse_telegram_html(html) == update["message"]["text"]


# --- splitting ----------------------------------------------------------------------------


def test_short_message_is_one_chunk() -> None:
    html = render(MODEL_ANSWER)
    assert split_telegram_html(html) == [html]
    assert render_messages(MODEL_ANSWER) == [html]


def test_long_paragraph_is_cut_at_spaces() -> None:
    words = [f"word{i}" for i in range(1300)]
    markdown = " ".join(words)
    assert len(markdown) > 10_000
    chunks = render_messages(markdown)
    check_chunks(markdown, chunks, TELEGRAM_TEXT_LIMIT)
    assert len(chunks) == 3
    for chunk in chunks:  # whole words only
        assert set(chunk.split()) <= set(words)
        assert not chunk.startswith(" ") and not chunk.endswith(" ")


def test_long_fenced_code_chunks_are_complete_code_blocks() -> None:
    lines = [f"    value_{i} = compute({i}) & mask  # <{i}>" for i in range(215)]
    markdown = "```python\n" + "\n".join(lines) + "\n```"
    assert 9_000 < len(markdown) < 10_000
    html = render(markdown)
    chunks = split_telegram_html(html)
    check_chunks(html, chunks, TELEGRAM_TEXT_LIMIT)
    assert len(chunks) == 3
    seen: list[str] = []
    for chunk in chunks:
        assert chunk.startswith(PY_OPEN)
        assert chunk.endswith("</code></pre>")
        assert chunk.count("<pre") == 1 and chunk.count("<code") == 1
        code = parse_telegram_html(chunk)
        seen.extend(code.split("\n"))  # cut at line breaks, indentation kept
    assert seen == lines


def test_cut_prefers_blank_line_then_line_break_then_space() -> None:
    html = "aaaa bbbb\ncccc\n\ndddd eeee\nffff"
    assert split_telegram_html(html, limit=22) == ["aaaa bbbb\ncccc", "dddd eeee\nffff"]
    assert split_telegram_html(html, limit=12) == ["aaaa bbbb", "cccc", "dddd eeee", "ffff"]
    assert split_telegram_html("aaaa bbbb cccc", limit=12) == ["aaaa bbbb", "cccc"]


def test_cut_without_any_space() -> None:
    chunks = split_telegram_html("x" * 10_000)
    assert [len(c) for c in chunks] == [4096, 4096, 1808]


def test_exactly_at_limit_is_one_chunk() -> None:
    assert split_telegram_html("x" * 4096) == ["x" * 4096]
    assert len(split_telegram_html("x" * 4097)) == 2
    assert split_telegram_html("😀" * 2048) == ["😀" * 2048]
    assert split_telegram_html("😀" * 2049) == ["😀" * 2048, "😀"]
    html = "<b>" + "&amp;" * 4096 + "</b>"
    assert split_telegram_html(html) == [html]


def test_entities_are_never_cut() -> None:
    html = "&amp;&lt;&gt;" * 50 + " " + "a&amp;b " * 100
    for limit in (7, 10, 33, 64):
        chunks = split_telegram_html(html, limit)
        check_chunks(html, chunks, limit)
        assert "".join(html_to_plain_text(c) for c in chunks).count("&") == 150


def test_emoji_are_counted_in_utf16_units() -> None:
    markdown = "😀👍🏽 中文 " * 1000
    chunks = render_messages(markdown)
    check_chunks(markdown, chunks, TELEGRAM_TEXT_LIMIT)
    assert len(chunks) == 3  # 7,000 code points (2 messages) but 10,000 UTF-16 units
    for limit in (5, 7, 100):
        small = split_telegram_html("😀" * 51 + "a😀" * 20, limit)
        check_chunks("😀" * 51 + "a😀" * 20, small, limit)


def assert_whole_clusters(text: str, limit: int) -> list[str]:
    """Split plain text; every chunk fits, no cut falls inside a grapheme cluster."""
    chunks = [parse_telegram_html(chunk) for chunk in split_telegram_html(text, limit)]
    assert "".join(chunks) == text
    assert all(telegram_length(chunk) <= limit for chunk in chunks)
    boundaries = {match.end() for match in regex.finditer(r"\X", text)}
    cuts = list(accumulate(len(chunk) for chunk in chunks))
    assert set(cuts) <= boundaries
    return chunks


@pytest.mark.parametrize(
    ("cluster", "units_before_cut"),
    [
        ("👍🏽", 2),  # skin tone modifier
        ("👨\u200d👩\u200d👧", 5),  # ZWJ family, naive cut after the woman
        ("🇫🇷", 2),  # the two regional indicators of a flag
        ("e\u0301", 1),  # combining acute accent
        ("❤\ufe0f", 1),  # variation selector
        ("\u1100\u1161\u11a8", 2),  # conjoining Hangul jamo
    ],
)
def test_hard_cut_never_splits_a_grapheme_cluster(cluster: str, units_before_cut: int) -> None:
    limit = 10
    lead = "x" * (limit - units_before_cut)  # the limit falls inside the cluster
    text = lead + cluster + "y" * 12
    chunks = assert_whole_clusters(text, limit)
    assert chunks[0] == lead
    assert chunks[1].startswith(cluster)
    for repeated in (cluster * 40, "a" + cluster * 40, "ab" + cluster * 40):
        for small in (limit, 9, 16):
            assert_whole_clusters(repeated, small)


def test_flags_are_paired_from_the_start_of_a_chunk() -> None:
    flags = "🇫🇷🇩🇪🇯🇵" * 30
    chunks = assert_whole_clusters(flags, 10)  # 10 units: 2 flags, never 2.5
    assert chunks[:2] == ["🇫🇷🇩🇪", "🇯🇵🇫🇷"]
    assert_whole_clusters("x" + flags, 10)


def test_rendered_messages_keep_emoji_whole() -> None:
    markdown = "**xxx" + "👍🏽" * 20 + "**"  # every limit of 10 units falls after a 👍
    chunks = render_messages(markdown, limit=10)
    assert all(chunk.startswith("<b>") and chunk.endswith("</b>") for chunk in chunks)
    texts = [parse_telegram_html(chunk) for chunk in chunks]
    assert texts == ["xxx👍🏽", *["👍🏽👍🏽"] * 9, "👍🏽"]


def test_cluster_longer_than_the_limit_is_cut_between_code_points() -> None:
    accent = "\u0301"
    text = "e" + accent * 11 + "👍🏽" * 3
    chunks = [parse_telegram_html(chunk) for chunk in split_telegram_html(text, 5)]
    assert chunks == ["e" + accent * 4, accent * 5, accent * 2, "👍🏽", "👍🏽", "👍🏽"]


def test_formatting_spanning_a_cut_is_closed_and_reopened() -> None:
    html = "<b>bold " + "x " * 20 + "<i>it</i></b> tail"
    chunks = split_telegram_html(html, limit=16)
    check_chunks(html, chunks, 16)
    assert all(c.startswith("<b>") for c in chunks[:-1])
    assert all(c.endswith("</b>") for c in chunks[:-1])
    assert chunks[-1].endswith("tail")
    link = '<blockquote><a href="https://x.org/?a=1&amp;b=2">' + "word " * 30 + "</a></blockquote>"
    chunks = split_telegram_html(link, limit=40)
    check_chunks(link, chunks, 40)
    for chunk in chunks:
        assert chunk.startswith('<blockquote><a href="https://x.org/?a=1&amp;b=2">')
        assert chunk.endswith("</a></blockquote>")


def test_tags_at_the_cut_do_not_leave_empty_elements() -> None:
    assert split_telegram_html("<b>aaa</b> <i>bbb</i>", limit=4) == ["<b>aaa</b>", "<i>bbb</i>"]
    assert split_telegram_html("<b>aaa </b><i>bbb</i>", limit=4) == ["<b>aaa</b>", "<i>bbb</i>"]
    assert split_telegram_html("aaa\n\n<pre>bbb</pre>", limit=4) == ["aaa", "<pre>bbb</pre>"]


def test_code_indentation_survives_a_cut() -> None:
    html = "intro\n\n<pre>  one\n\n  two\n    three</pre>"
    assert split_telegram_html(html, limit=10) == [
        "intro",
        "<pre>  one</pre>",
        "<pre>  two</pre>",
        "<pre>    three</pre>",
    ]
    assert split_telegram_html("<pre>  leading</pre>") == ["<pre>  leading</pre>"]


def test_blank_and_invalid_input() -> None:
    assert split_telegram_html("") == []
    assert split_telegram_html(" <b> </b>\n ") == []
    with pytest.raises(TelegramHtmlError):
        split_telegram_html("<div>x</div>")
    with pytest.raises(ValueError):
        split_telegram_html("abc", limit=1)


def test_mixed_document_split_at_many_limits() -> None:
    markdown = MODEL_ANSWER * 3
    html = render(markdown)
    for limit in (2, 3, 16, 50, 200, 1000, 4096):
        chunks = render_messages(markdown, limit)
        check_chunks(html, chunks, limit)


def test_random_documents_keep_the_invariants() -> None:
    rng = random.Random(20240601)
    pieces = [
        "word", "**bold**", "_it_", "`a<b`", "&", "<x>", "😀", "中文", "👍🏽", "\n", "\n\n",
        "- item ", "1. item ", "> quote ", "```py\ncode\n  more\n```\n", "[l](https://x.org/a_b)",
        "| a | b |\n|---|---|\n| 1 | 2 |\n", "~~s~~", "***", " ",
    ]  # fmt: skip
    for _ in range(150):
        markdown = "".join(rng.choice(pieces) + rng.choice(["", " ", "\n"]) for _ in range(60))
        html = markdown_to_telegram_html(markdown)
        if not html:
            continue
        parse_telegram_html(html)
        limit = rng.choice([2, 3, 5, 8, 13, 40, 120])
        check_chunks(html, split_telegram_html(html, limit), limit)


def test_one_megabyte_splits_into_valid_chunks() -> None:
    # Its speed is measured by bench/telegram_text.py.
    html = markdown_to_telegram_html("Some **text** with & and <b> and 😀.\n\n" * 10) + "\n\n"
    html = (html * 3000)[:-2]
    assert len(html) > 1_000_000
    chunks = split_telegram_html(html)
    assert len(chunks) > 150
    assert all(telegram_length(parse_telegram_html(c)) <= TELEGRAM_TEXT_LIMIT for c in chunks)


# --- plain text fallback -----------------------------------------------------------------


def test_html_to_plain_text_of_valid_html() -> None:
    assert html_to_plain_text("<b>a &amp; b</b> &lt;tag&gt; &#x1F600;") == "a & b <tag> 😀"
    html = render(MODEL_ANSWER)
    assert html_to_plain_text(html) == parse_telegram_html(html)


def test_html_to_plain_text_of_rejected_html() -> None:
    assert html_to_plain_text("<div>a &amp; <b>b</div>") == "a & b"
    assert html_to_plain_text("a < b & c &nbsp; &ampx &#0;") == "a < b & c &nbsp; &ampx &#0;"
    assert html_to_plain_text("<br/>x&lt;y&#128512;") == "x<y😀"
