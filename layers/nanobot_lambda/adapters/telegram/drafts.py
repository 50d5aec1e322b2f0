"""Render a Markdown answer that is still being written as Telegram HTML drafts.

While the model streams its answer, the bot shows the text so far in a Telegram draft. That
text is Markdown cut at an arbitrary character: rendered as is, an unclosed `**bold`, a
half-written link or a fence opener just begun would show raw markup until the rest arrives.
`complete_partial_markdown` turns it into Markdown that renders without dangling markup, and
`render_draft` renders that exactly as the final answer is rendered and split
(`render_messages`), so a draft is always valid Telegram HTML and long drafts continue across
the message limit the same way the final answer does.

Only the block holding the last line is unfinished. markdown-it's block parser (cheap: no
inline parsing) says which block that is. Then:

- an open code fence with content is left alone (CommonMark runs it to the end of the text);
  a fence whose opener line is still being typed, or a partial closing fence, is held back;
- a line with markup only (a list marker, `#`, `>`, a rule, a setext underline) is held back;
- a table's header row, and its delimiter row while incomplete, are held back until
  markdown-it sees a table;
- in a paragraph, heading or table cell, a scan of the inline source approximates CommonMark:
  code spans, backslash escapes, links, bare URLs and autolinks are skipped, and emphasis and
  strikethrough runs are matched with the renderer's own flanking rules (CJK-friendly
  included; CommonMark's "rule of 3" is left out). Trailing markup with nothing visible
  after it is dropped, a half-written link shows its label, an open code span is closed with
  a backtick run of its length, and the emphasis still open is closed, innermost first.

Text in code is never changed. A finished, well-formed answer renders exactly as the final
answer does. What a prefix cannot know: an opener CommonMark leaves as text because no closer
ever comes (`2*3`, `**Note:**text`) is closed all the same, and markup at the very end that
waits for more text (`[1]`, a `*`, a lone `\\`, a table header row, a `---` rule) is held
back even if the answer ends there.
"""

from __future__ import annotations

import re
import string
from bisect import bisect_left
from typing import NamedTuple

from markdown_it.token import Token

from nanobot_lambda.adapters.telegram.formatting import (
    _MARKDOWN,
    TELEGRAM_TEXT_LIMIT,
    _CjkFriendlyState,
    bare_url_end,
    render_messages,
)

_ASCII_PUNCTUATION = frozenset(string.punctuation)
# Characters the inline scan looks at; text between them is only checked for being blank.
_SPECIAL = re.compile(r"[*_~`\[\]!\\<:|]")
_BACKTICKS = re.compile(r"`+")
_AUTOLINK = re.compile(r"<[A-Za-z][A-Za-z0-9.+-]{1,31}:[^\s<>]*>")
# An autolink still being typed: `<https://exa`, or `<ht` on its way to one.
_PARTIAL_AUTOLINK = re.compile(r"<(?:[A-Za-z][A-Za-z0-9.+-]{1,31}:[^\s<>]*|h|ht|htt|https?)")
_PARTIAL_DELIMITER_ROW = re.compile(r"[|:][\s|:-]*")
_MAX_PASSES = 8


def render_draft(text: str, limit: int = TELEGRAM_TEXT_LIMIT) -> list[str]:
    """The text so far as Telegram HTML messages, like `render_messages` for the final answer.

    [] while nothing visible is there yet; the caller shows the last message in the draft.
    """
    return render_messages(complete_partial_markdown(text), limit)


def complete_partial_markdown(text: str) -> str:
    """Markdown cut at any character made into Markdown that renders without dangling markup."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").rstrip()
    # Each pass holds back lines at the end and parses again; realistic text needs one to
    # three. A pathological tail (thousands of `- **` lines) is shown as the cap leaves it.
    for _ in range(_MAX_PASSES):
        if not text:
            break
        lines = text.split("\n")
        tokens: list[Token] = []
        _MARKDOWN.block.parse(text, _MARKDOWN, {}, tokens)
        innermost = _innermost_tokens(tokens, len(lines))
        index = innermost[-1]
        if index < 0:  # only link reference definitions: the renderer shows them as text
            return text
        token = tokens[index]
        assert token.map is not None  # _innermost_tokens only picks tokens with a map
        if token.type in ("fence", "code_block"):
            held = _held_code_lines(token, len(lines))
        elif token.type == "table_open":  # the delimiter row just completed: a table
            held = 0
        elif token.type == "inline":
            table = tokens[index - 1].type in ("th_open", "td_open")
            held = 0 if table else _held_table_lines(token.content)
            if not held:
                completed = _complete_block(text, lines, token, table)
                if completed is not None:
                    return completed
                held = len(lines) - token.map[0]  # nothing visible in the block yet
        else:  # an empty list item, heading or quote, a rule, a setext underline
            held = 1
            while held < len(lines) and _markup_only(tokens, innermost[-held - 1]):
                held += 1  # and the lines like it (or blank) before it, in this pass
        if not held:
            return text
        text = "\n".join(lines[:-held]).rstrip()
    return text


def _innermost_tokens(tokens: list[Token], line_count: int) -> list[int]:
    """For each line, the index of the innermost token holding it (tokens come outer first),
    or -1 (a blank line between blocks, a link reference definition)."""
    innermost = [-1] * line_count
    for index, token in enumerate(tokens):
        if token.map:
            innermost[token.map[0] : token.map[1]] = [index] * (token.map[1] - token.map[0])
    return innermost


def _markup_only(tokens: list[Token], index: int) -> bool:
    """Whether a line whose innermost token is `tokens[index]` shows nothing of its own."""
    return index < 0 or tokens[index].type not in ("inline", "fence", "code_block", "table_open")


def _held_code_lines(token: Token, line_count: int) -> int:
    """Lines to hold back from the end of a code block that holds the last line."""
    assert token.map is not None
    content = token.content
    content_lines = content.count("\n") + (1 if content and not content.endswith("\n") else 0)
    if token.type == "code_block" or token.map[1] - token.map[0] != content_lines + 1:
        return 0  # indented code, or a fence with its closing line
    if not content.strip():
        return line_count - token.map[0]  # the opener line is still being typed
    last = content.rstrip("\n").rsplit("\n", 1)[-1].strip()
    fence = token.markup
    if last and last == fence[0] * len(last) and len(last) < len(fence):
        return 1  # the closing fence is being typed
    return 0


def _held_table_lines(content: str) -> int:
    """Lines of a paragraph to hold back because they may be a table's header in the making.

    markdown-it only makes a table once the delimiter row has as many cells as the header,
    so until then the header row (and the partial delimiter row) would show as raw text. Only
    a paragraph's first `|` line counts: later ones are a table that did not form.
    """
    rows = [row.strip() for row in content.split("\n")]
    if len(rows) >= 2 and _PARTIAL_DELIMITER_ROW.fullmatch(rows[-1]):
        header = rows[-2].startswith("|") and not (len(rows) > 2 and rows[-3].startswith("|"))
        return 2 if header else 0
    header = rows[-1].startswith("|") and not (len(rows) > 1 and rows[-2].startswith("|"))
    return 1 if header else 0


def _complete_block(text: str, lines: list[str], token: Token, table: bool) -> str | None:
    """Complete the inline Markdown of the last block; None if it shows nothing yet."""
    assert token.map is not None
    start = sum(len(line) + 1 for line in lines[: token.map[0]])
    if not table:  # skip the container markers (`- `, `> `, `## `) before the content
        first = token.content.split("\n", 1)[0]
        start += max(0, lines[token.map[0]].rfind(first))
    scan = _InlineScan(text, start, table)
    scan.run()
    if scan.visible_end <= start:
        return None
    kept: list[str] = []
    pos = start
    for cut in scan.dropped:
        if cut < scan.visible_end:
            kept.append(text[pos:cut])
            pos = cut + (2 if text[cut] == "!" else 1)
    kept.append(text[pos : scan.visible_end])
    return text[:start] + "".join(kept) + scan.code_closer + _closers(scan)


class _Event(NamedTuple):
    """Something the emphasis matching needs, in source order."""

    kind: str  # "run" (of `*`, `_` or `~`), "bracket" (`[` or `![`), "link_end" or "cell"
    pos: int
    char: str = ""
    length: int = 0
    can_open: bool = False
    can_close: bool = False


class _InlineScan:
    """One pass over text[start:], the inline source of the last block.

    It records the delimiter runs, brackets and table cell borders, and `visible_end`, the
    end of the last thing that shows as text: whatever follows is trailing markup (a run with
    nothing after it, a `[`, a lone `\\`) and is dropped. It stops at a half-written link
    (shown as its label) and at an open code span (closed with `code_closer`).
    """

    def __init__(self, text: str, start: int, table: bool) -> None:
        self.text = text
        self.start = start
        self.table = table
        # flanking exactly as the renderer computes it (over the whole text: the characters
        # before the block are line breaks and container markers, as good as its start)
        self.state = _CjkFriendlyState(text, _MARKDOWN, {}, [])
        self.events: list[_Event] = []
        self.links: set[int] = set()  # indices of the bracket events that open a whole link
        self.dropped: list[int] = []  # positions of `[`, `![` and `<` to leave out
        self.visible_end = start
        self.code_closer = ""
        self.ticks: dict[int, list[int]] = {}  # backtick runs by length: their positions
        for run in _BACKTICKS.finditer(text, start):
            self.ticks.setdefault(len(run.group()), []).append(run.start())

    def run(self) -> None:
        text, n = self.text, len(self.text)
        brackets: list[int] = []  # indices of the bracket events not yet closed
        i = self.start
        while i < n:
            special = _SPECIAL.search(text, i)
            stop = special.start() if special else n
            if stop > i:
                plain = text[i:stop].rstrip()
                if plain:
                    self.visible_end = i + len(plain)
                i = stop
                continue
            char = text[i]
            if char in "*_~":
                end = i + 1
                while end < n and text[end] == char:
                    end += 1
                scanned = self.state.scanDelims(i, char != "_")  # as the renderer's rules do
                self.events.append(
                    _Event("run", i, char, end - i, scanned.can_open, scanned.can_close)
                )
                if char == "_" and i > self.start and text[i - 1].isalnum():
                    # It can never open (`snake_`): it closes an opener or is text for good.
                    self.visible_end = end
                i = end
            elif char == "`":
                i = self._code_span(i)
                if i < 0:
                    break
            elif char == "[" or text.startswith("![", i):
                brackets.append(len(self.events))
                self.events.append(_Event("bracket", i))
                i += 2 if char == "!" else 1
            elif char == "]" and brackets:
                opener = brackets.pop()
                after = i + 1
                link_end = _link_destination_end(text, after)
                if link_end > 0:
                    self.links.add(opener)
                    self.events.append(_Event("link_end", i))
                    i = self.visible_end = link_end
                elif after == n or text[after] == "(":
                    brackets.append(opener)  # a half-written link: show its label only
                    break
                else:  # brackets around text: shown as they are
                    i = self.visible_end = after
            elif char == "\\" and i + 1 == n:
                break  # a lone backslash: an escape still being typed
            elif char == "\\":
                i = self.visible_end = i + (2 if text[i + 1] in _ASCII_PUNCTUATION else 1)
            elif char == "|" and self.table:
                brackets.clear()  # a cell is a separate inline text: its brackets stay as is
                self.events.append(_Event("cell", i))
                i += 1
            elif char == "<" and (autolink := _AUTOLINK.match(text, i)):
                i = self.visible_end = autolink.end()
            elif char == "<" and _PARTIAL_AUTOLINK.fullmatch(text, i):
                self.dropped.append(i)  # show the URL so far without its `<`
                self.visible_end = n
                break
            elif char == ":" and (url_end := _bare_url_end(text, i)) > 0:
                i = self.visible_end = url_end  # its `_` and `*` are not emphasis
            else:
                i = self.visible_end = i + 1
        # Brackets never closed are left out (a link being written, or text the model will
        # close later); their text stays.
        self.dropped.extend(self.events[index].pos for index in brackets)
        self.dropped.sort()

    def _code_span(self, i: int) -> int:
        """Skip the code span opened by the backtick run at `i`; -1 if it is still open."""
        text = self.text
        end = i + 1
        while end < len(text) and text[end] == "`":
            end += 1
        length = end - i
        # In a table a cell ends at an unescaped `|`, even inside backticks (GFM).
        limit = _cell_end(text, end) if self.table else len(text)
        closers = self.ticks.get(length, [])
        k = bisect_left(closers, end)
        if k < len(closers) and closers[k] + length <= limit:
            self.visible_end = closers[k] + length
            return self.visible_end
        if limit < len(text):  # no closing run in this cell: the backticks are text
            self.visible_end = end
            return end
        # Open to the end of the text. A shorter backtick run at the end is its closing run
        # being typed.
        content_end = len(text.rstrip("`"))
        if content_end < end or len(text) - content_end >= length:
            content_end = len(text)
        if text[end:content_end].strip():
            space = " " if text[content_end - 1] == "`" else ""
            self.visible_end = content_end
            self.code_closer = space + "`" * length
        return -1


def _closers(scan: _InlineScan) -> str:
    """Match the delimiter runs before `scan.visible_end`; return closers for those left open.

    CommonMark's "process emphasis" without its rule of 3: a closing run closes the nearest
    opener of its character, openers in between stay text. Link text is matched on its own.
    """
    openers = _Openers()
    bottoms: list[int] = []  # where each enclosing link's text starts in `openers`
    for index, event in enumerate(scan.events):
        if event.pos >= scan.visible_end:
            break
        if event.kind == "bracket" and index in scan.links:
            bottoms.append(len(openers.runs))
        elif event.kind == "link_end":
            openers.truncate(bottoms.pop())
        elif event.kind == "cell":
            openers.truncate(0)
        elif event.kind == "run":
            openers.match(event, bottoms[-1] if bottoms else 0)
    return "".join(char * count for char, count in reversed(openers.runs))


class _Openers:
    """The emphasis and strikethrough runs still open, innermost last."""

    def __init__(self) -> None:
        self.runs: list[tuple[str, int]] = []  # (character, length still open)
        self.open = dict.fromkeys("*_~", 0)  # runs open per character: skips hopeless searches

    def truncate(self, size: int) -> None:
        for char, _ in self.runs[size:]:
            self.open[char] -= 1
        del self.runs[size:]

    def match(self, run: _Event, bottom: int) -> None:
        length = run.length
        if run.char == "~":  # strikethrough takes `~~` pairs; a single `~` is text
            length -= length % 2
        while length and run.can_close and self.open[run.char]:
            runs = self.runs
            nearest = next(
                (k for k in range(len(runs) - 1, bottom - 1, -1) if runs[k][0] == run.char), -1
            )
            if nearest < 0:
                break
            char, count = runs[nearest]
            used = min(length, count)
            length -= used
            self.truncate(nearest + 1)  # openers between the pair stay text
            if count > used:
                runs[nearest] = (char, count - used)
            else:
                self.truncate(nearest)
        if length and run.can_open:
            self.runs.append((run.char, length))
            self.open[run.char] += 1


def _cell_end(text: str, pos: int) -> int:
    """The position of the first unescaped `|` from `pos`, else len(text)."""
    bar = text.find("|", pos)
    while bar > 0 and text[bar - 1] == "\\":
        bar = text.find("|", bar + 1)
    return bar if bar >= 0 else len(text)


def _link_destination_end(text: str, after: int) -> int:
    """The end of a whole `(destination)` starting at `after`, else -1."""
    if after >= len(text) or text[after] != "(":
        return -1
    depth, i = 0, after
    while i < len(text):
        if text[i] == "\\":
            i += 1
        elif text[i] == "(":
            depth += 1
        elif text[i] == ")":
            depth -= 1
            if not depth:
                return i + 1
        i += 1
    return -1


def _bare_url_end(text: str, colon: int) -> int:
    """The end of the bare URL whose `://` is at `colon`, as the renderer takes it; else -1."""
    if not text.startswith("://", colon):
        return -1
    head = text[max(0, colon - 5) : colon].lower()
    scheme = next((s for s in ("https", "http") if head.endswith(s)), "")
    before = colon - len(scheme) - 1
    if not scheme or (before >= 0 and (text[before].isalnum() or text[before] in "+-.")):
        return -1
    end = bare_url_end(text, colon, len(text))
    return end if end > colon + 3 else -1
