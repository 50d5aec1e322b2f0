"""Drafts: a Markdown answer cut at any character, rendered as Telegram HTML."""

from __future__ import annotations

import re

import pytest

from nanobot_lambda.adapters.telegram.drafts import complete_partial_markdown, render_draft
from nanobot_lambda.adapters.telegram.formatting import TELEGRAM_TEXT_LIMIT, render_messages
from nanobot_lambda.adapters.telegram.html_check import parse_telegram_html, telegram_length

MARKUP = "*_~`[]|#"

# Realistic answers; each uses one or more of the constructs a draft has to handle.
SAMPLES = {
    "emphasis": (
        "Here is **bold text**, *italic*, _also italic_ and ***both***. Nested: **bold "
        "with *italic* inside** and *italic with **bold** inside*; ~~struck~~ too."
    ),
    "code_spans": (
        "Use `a * b` or `**kwargs` in Python, and ``a `tick` here``; snake_case_name and "
        "my_var stay as they are. Math: 2 * 3 = 6 and 4 * 5 = 20."
    ),
    "fence": (
        "Example:\n\n```python\ndef power(x):\n    return x ** 2  # *not* emphasis\n```\n\n"
        "Done, **really** done.\n\n~~~\nplain ~~ code\n~~~"
    ),
    "links": (
        "See [the docs](https://example.com/docs_v2?a=1&b=2) or https://x.org/__init__.py "
        "for details. Also [**a bold link**](https://x.org/a_b), <https://x.org/c_d> and "
        "![a cat](https://x.org/cat_1.png)."
    ),
    "lists": (
        "Steps:\n\n- first **step**\n- second with `code`\n  - nested *item*\n* star item\n\n"
        "1. one\n2. two _it_\n3. three"
    ),
    "heading": "# Title with *style*\n\nSome text.\n\n## Sub heading\n\nMore **text** here.",
    "table": (
        "Compare:\n\n| Name | Value |\n|:-----|------:|\n| **alpha** | 1 |\n| b_c | 22 |\n"
        "| `x\\|y` | 333 |\n| `a|b` | 4 |\n\nEnd of table."
    ),
    "wide_table": (
        "| Left | Center | Right | More | Most |\n|:---|:---:|---:|---|---|\n"
        "| [l](https://x.org) | _y_ | 22 | **b** | `c` |\n| a | b | c | d | e |"
    ),
    "blockquote": "> Quoted **bold**\n> second _line_\n\nAfter the quote.",
    "cjk": "**重要：**これは大切です。*注意*してください。~~古い~~情報と**太字**です。",
}
# Over the message limit, so the draft continues into a second part.
LONG = "\n\n".join(
    f"Paragraph {n}: **bold {n}**, *italic*, `code {n}` and [link {n}](https://x.org/{n}) "
    + "filler words to make it long " * 3
    for n in range(36)
)


def plain(parts: list[str]) -> str:
    return "".join(parse_telegram_html(part) for part in parts)


def normalized(text: str) -> str:
    # Whitespace may differ (cuts between parts, table padding) and a table's rule under
    # the header widens as wider cells arrive, so runs of `-` count as one.
    return re.sub("-+", "-", "".join(text.split()))


# How much of the end of a draft may differ from the final text. Only markup still being
# typed can be wrong, and only in what it shows of itself: in these samples a `<` before an
# autolink's scheme arrives (`, <` is shown until `<h` makes it a link), and `` `x\ `` in a
# table cell, shown `x\` until `|y` arrives. A literal `[label` at the end shows `label` until
# the `]` and what follows it arrive, which needs the label's length: not in these samples.
TAIL = 2


def check_prefixes(answer: str, limit: int, prefixes: range) -> None:
    final = plain(render_messages(answer, limit))
    final_normalized = normalized(final)
    for end in prefixes:
        prefix = answer[:end]
        parts = render_draft(prefix, limit)
        for part in parts:
            text = parse_telegram_html(part)  # valid and not empty, or this raises
            assert telegram_length(text) <= limit, prefix
        shown = plain(parts)
        for char in MARKUP:
            assert shown.count(char) <= final.count(char), (prefix, char, shown)
        # A table row being written is padded with empty cells: drop their separators.
        draft = normalized(shown).rstrip("|")
        settled = draft[: max(0, len(draft) - TAIL)]
        assert final_normalized.startswith(settled), (prefix, shown)


@pytest.mark.parametrize("answer", SAMPLES.values(), ids=SAMPLES.keys())
def test_every_prefix_renders_cleanly(answer: str) -> None:
    check_prefixes(answer, TELEGRAM_TEXT_LIMIT, range(len(answer) + 1))


@pytest.mark.parametrize("answer", SAMPLES.values(), ids=SAMPLES.keys())
def test_every_prefix_renders_cleanly_when_split(answer: str) -> None:
    check_prefixes(answer, 48, range(len(answer) + 1))


def test_every_prefix_of_a_long_answer_renders_cleanly() -> None:
    final = render_messages(LONG)
    assert len(final) == 2 and final[1].startswith("Paragraph")
    # Every cut right around where the draft starts its second part, every 7th cut near it,
    # every 41st elsewhere (each render of 5,000 characters takes some 20 ms; steps prime to
    # the text's construct lengths, so cuts fall at every offset within them).
    second_part = LONG.index(final[1][: final[1].index(":")])
    check_prefixes(LONG, TELEGRAM_TEXT_LIMIT, range(second_part - 60, second_part + 60))
    check_prefixes(LONG, TELEGRAM_TEXT_LIMIT, range(second_part - 300, second_part + 300, 7))
    check_prefixes(LONG, TELEGRAM_TEXT_LIMIT, range(0, len(LONG) + 1, 41))


def test_a_long_draft_continues_across_the_limit_like_the_final_split() -> None:
    final = render_messages(LONG)
    cut = LONG.index("Paragraph 34")
    draft = render_draft(LONG[:cut])
    assert len(draft) == 2
    assert draft[0] == final[0]
    assert len(draft[1]) > 500 and final[1].startswith(draft[1])


@pytest.mark.parametrize("answer", [*SAMPLES.values(), LONG], ids=[*SAMPLES.keys(), "long"])
def test_finished_answer_renders_like_the_final(answer: str) -> None:
    assert render_draft(answer) == render_messages(answer)
    assert render_draft(answer, 48) == render_messages(answer, 48)
    assert render_draft(answer + "\n") == render_messages(answer)


# --- the completion, construct by construct -----------------------------------------------


@pytest.mark.parametrize(
    ("text", "completed"),
    [
        # open emphasis and strikethrough are closed, innermost first
        ("**bold", "**bold**"),
        ("*it", "*it*"),
        ("_it", "_it_"),
        ("__bold", "__bold__"),
        ("***both", "***both***"),
        ("~~gone", "~~gone~~"),
        ("**bold _it", "**bold _it_**"),
        ("*it **bold", "*it **bold***"),
        ("**bold**, *it", "**bold**, *it*"),
        ("**bold ", "**bold**"),
        # a closing run being typed
        ("**bold*", "**bold**"),
        ("~~gone~", "~~gone~~"),
        # trailing markup with nothing after it yet
        ("text **", "text"),
        ("text *", "text"),
        ("a ** _", "a"),
        ("**", ""),
        ("see [", "see"),
        ("a \\", "a"),
        # code spans: closed with a run of their length; a closing run being typed is dropped
        ("`code", "`code`"),
        ("``a `b", "``a `b``"),
        ("``code`", "``code``"),
        ("`a *", "`a *`"),
        ("`", ""),
        ("text ``", "text"),
        ("**see `x", "**see `x`**"),
        # links: a half-written link shows its label
        ("[label](https://exa", "label"),
        ("[label](", "label"),
        ("[label]", "label"),
        ("[label", "label"),
        ("[**bold** label](https://x", "**bold** label"),
        ("**see [docs](https://x", "**see docs**"),
        ("![a cat](https://x.org/c", "a cat"),
        ("<https://x.org/a_", "https://x.org/a_"),
        ("see <ht", "see ht"),
        ("see [docs](https://x.org) and **more", "see [docs](https://x.org) and **more**"),
        # markup-only lines
        ("- ", ""),
        ("para\n- ", "para"),
        ("- a\n- ", "- a"),
        ("- **", ""),
        ("#", ""),
        ("## ", ""),
        ("> ", ""),
        ("1.", ""),
        ("para\n\n---", "para"),
        ("Title\n-", "Title"),
        # fences
        ("```", ""),
        ("```pyth", ""),
        ("```python\n", ""),
        ("text\n\n~~~", "text"),
        ("```python\nx = 1 **", "```python\nx = 1 **"),
        ("```python\nx = 1\n``", "```python\nx = 1"),
        ("- ```py", ""),
        # tables: held back until the delimiter row makes them a table
        ("| a | b |", ""),
        ("Compare:\n\n| a | b", "Compare:"),
        ("| a | b |\n|---|", ""),
        ("| a | b |\n|--", ""),
        ("| a | b |\n|---|---|", "| a | b |\n|---|---|"),
        ("| a | b |\n|---|---|\n| **x", "| a | b |\n|---|---|\n| **x**"),
        ("| a | b |\n|---|---|\n| x |", "| a | b |\n|---|---|\n| x"),
        ("| a | b |\n|---|---|\n|", "| a | b |\n|---|---|"),
        # a cell ends at `|` even inside backticks, as markdown-it splits it
        ("| a | b |\n|---|---|\n| `x", "| a | b |\n|---|---|\n| `x`"),
        ("| a | b |\n|---|---|\n| `x|", "| a | b |\n|---|---|\n| `x"),
        ("| a | b |\n|---|---|\n| `x\\|y", "| a | b |\n|---|---|\n| `x\\|y`"),
        # containers
        ("> quote **b", "> quote **b**"),
        ("- item _it", "- item _it_"),
        ("# Title **b", "# Title **b**"),
        # CJK-friendly emphasis, as the final rendering has it
        ("**重要：", "**重要：**"),
        ("**重要：*", "**重要：**"),
    ],
)
def test_completion(text: str, completed: str) -> None:
    assert complete_partial_markdown(text) == completed


@pytest.mark.parametrize(
    "text",
    [
        "snake_case_name",
        "snake_",
        "2 * 3 = 6",
        "2 * 3",
        "Use `**kwargs` here",
        "Use `**`",
        "```python\nx = 2 ** 3  # *not* emphasis",
        "```python\nx = 2 ** 3\n```",
        "    indented **code",
        "see https://x.org/__init__",
        "see https://x.org/a_b and",
        "<https://x.org/a_b>",
        r"\*not emphasis\*",
        "**重要：**これは",
        "[docs](https://x.org/a_b)",
        "[x](javascript:alert(1))",
        "a | b",
        "x <y",
    ],
)
def test_text_that_needs_nothing_stays(text: str) -> None:
    assert complete_partial_markdown(text) == text


def test_bare_url_punctuation_is_not_taken_as_emphasis() -> None:
    assert complete_partial_markdown("see https://x.org/__init") == "see https://x.org/__init"
    assert complete_partial_markdown("**https://x.org/a_b") == "**https://x.org/a_b**"


@pytest.mark.parametrize(
    ("text", "html"),
    [
        ("**bold", "<b>bold</b>"),
        ("**重要：**これ", "<b>重要：</b>これ"),
        ("`a **b", "<code>a **b</code>"),
        ("[label](https://exa", "label"),
        ("```py\nx = 1 **", '<pre><code class="language-py">x = 1 **</code></pre>'),
        ("~~~\nx", "<pre>x</pre>"),
        ("| a | b |\n|---|---|\n| 1 | **2", "<pre>a | b\n--+--\n1 | 2</pre>"),
        ("Intro with *it", "Intro with <i>it</i>"),
    ],
)
def test_draft_html(text: str, html: str) -> None:
    assert render_draft(text) == [html]


@pytest.mark.parametrize("text", ["", "   \n ", "**", "- ", "```py", "| a | b |", "[", "#"])
def test_nothing_visible_yet(text: str) -> None:
    assert render_draft(text) == []


def test_an_opener_that_commonmark_leaves_as_text_is_closed_all_the_same() -> None:
    # `**Note:**text`: no CJK neighbour, so the second run can only open and the final
    # rendering shows the asterisks (unless a later `**` closes it). A draft can't know; it
    # closes both runs, which renders without raw markup.
    assert render_messages("**Note:**text") == ["**Note:**text"]
    assert render_draft("**Note:**text") == ["<b>Note:<b>text</b></b>"]


def test_emphasis_does_not_leak_out_of_a_finished_link_or_table_cell() -> None:
    assert complete_partial_markdown("[a **b](https://x.org) c") == "[a **b](https://x.org) c"
    table = "| a | b |\n|---|---|\n| *x | y"
    assert complete_partial_markdown(table) == table


def test_emphasis_closed_before_it_continues_on_a_later_line() -> None:
    text = "**bold across\nlines and _more"
    assert complete_partial_markdown(text) == text + "_**"
    assert render_draft(text) == ["<b>bold across\nlines and <i>more</i></b>"]


def test_a_long_run_of_markup_only_lines_is_held_back_in_one_pass() -> None:
    # one line per pass would stop at the cap on passes, with empty items left
    assert complete_partial_markdown("text\n" + "- \n" * 3000 + "#") == "text"


def test_only_the_last_block_is_completed() -> None:
    # an earlier paragraph's unclosed `**` is text in the final rendering too
    text = "2 **x\n\nnext *it"
    assert complete_partial_markdown(text) == "2 **x\n\nnext *it*"
