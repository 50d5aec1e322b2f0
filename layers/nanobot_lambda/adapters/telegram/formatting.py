"""Turn the model's Markdown answer into Telegram Bot API HTML messages.

`markdown_to_telegram_html` parses with markdown-it-py and walks the token stream with a small
renderer that only emits what Telegram's `parse_mode=HTML` accepts; raw HTML in the Markdown is
shown as text. `split_telegram_html` cuts the result into messages that each fit Telegram's
limit (measured in UTF-16 code units of the displayed text) and are valid HTML on their own.

Emphasis next to Chinese, Japanese or Korean text follows the CJK-friendly amendment to
CommonMark (as markdown-it-cjk-friendly does): a `*` or `~` run with no whitespace on either
side can both open and close when the character just before or after it is CJK (East Asian
wide, fullwidth or halfwidth and not an emoji, or Hangul), full-width punctuation included.
So `**重要：**これは` is bold, where plain CommonMark leaves the asterisks; `_` runs, and runs
with no CJK neighbour, keep CommonMark's rules (`snake_case`, `**Note:**text`).

A cut that has to fall inside a word falls between grapheme clusters (UAX #29), so an emoji
with its skin tone, a ZWJ sequence, a flag or a letter with its accents is never split; only
a single cluster longer than the limit is cut between code points.
"""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_right
from collections.abc import Iterator, Sequence
from itertools import accumulate

import regex  # type: ignore[import-untyped]  # no stubs installed (types-regex)
from markdown_it import MarkdownIt
from markdown_it.common.utils import isWhiteSpace
from markdown_it.parser_inline import ParserInline
from markdown_it.rules_inline import StateInline
from markdown_it.rules_inline.state_inline import Scanned
from markdown_it.token import Token
from markdown_it.utils import EnvType

from nanobot_lambda.adapters.telegram.html_check import (
    Tag,
    TelegramHtmlError,
    scan_telegram_html,
    telegram_length,
)

TELEGRAM_TEXT_LIMIT = 4096

HORIZONTAL_RULE = "———"
BULLET = "• "
NESTED_INDENT = "  "  # per list level
LINK_SCHEMES = ("http://", "https://", "tg://", "mailto:")

_WHITESPACE = " \t\r\n\v\f"
_INLINE_TAGS = {
    "strong_open": "<b>",
    "strong_close": "</b>",
    "em_open": "<i>",
    "em_close": "</i>",
    "s_open": "<s>",
    "s_close": "</s>",
}
# Characters that end a bare URL but are almost always sentence punctuation or Markdown.
_URL_TRAILING = ".,:;!?*_~'\""


def markdown_to_telegram_html(markdown: str) -> str:
    """Render Markdown as Telegram HTML (not split; may exceed the message limit)."""
    blocks = _Renderer(_MARKDOWN.parse(markdown)).blocks(None)
    html = "\n".join(line for line, _ in _join(blocks, blank_line=True)).strip()
    if not html and markdown.strip():
        # Nothing visible came out (an empty code fence, or content nested deeper than
        # markdown-it's maxNesting, which it drops): an answer must never vanish, so show the
        # source as text.
        return _escape(markdown.strip())
    return html


def split_telegram_html(html: str, limit: int = TELEGRAM_TEXT_LIMIT) -> list[str]:
    """Split Telegram HTML into messages of at most `limit` UTF-16 units of displayed text.

    Every chunk is valid Telegram HTML on its own: tags open at a cut are closed at the end of
    one chunk and reopened at the start of the next. Cuts prefer a blank line, then a line
    break, then a space; the whitespace at a cut is dropped. Chunks whose text would be blank
    are left out. Raises `TelegramHtmlError` if `html` is not valid Telegram HTML.
    """
    if limit < 2:  # one astral-plane character is 2 units
        raise ValueError("limit must be at least 2")
    text, tags = scan_telegram_html(html)
    return _Splitter(text, tags, limit).split()


def render_messages(markdown: str, limit: int = TELEGRAM_TEXT_LIMIT) -> list[str]:
    """markdown_to_telegram_html then split_telegram_html; never returns an empty chunk;
    [] for blank input."""
    html = markdown_to_telegram_html(markdown)
    return split_telegram_html(html, limit) if html else []


def html_to_plain_text(html: str) -> str:
    """The text Telegram would display for this HTML (tags removed, entities unescaped).

    Used to resend a chunk as plain text when Telegram rejects its HTML, so it never raises:
    for HTML the checker refuses it falls back to removing anything tag-shaped and decoding
    the entities Telegram knows.
    """
    try:
        return scan_telegram_html(html)[0]
    except TelegramHtmlError:
        return _LENIENT_ENTITY.sub(_decode_lenient, _LENIENT_TAG.sub("", html))


# --- Markdown -> HTML ------------------------------------------------------------------------


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _escape_attribute(value: str) -> str:
    return _escape(value).replace('"', "&quot;")


def _is_linkable(url: str) -> bool:
    return url.lower().startswith(LINK_SCHEMES)


def bare_url_end(src: str, colon: int, limit: int) -> int:
    """Where the bare URL whose `://` starts at `colon` ends (`colon + 3`: it has no body):
    up to whitespace, `<` or `>`, without trailing punctuation or an unbalanced `)`."""
    end = colon + 3
    while end < limit and not src[end].isspace() and src[end] not in "<>":
        end += 1
    while end > colon + 3 and (
        src[end - 1] in _URL_TRAILING
        or (src[end - 1] == ")" and src.count("(", colon, end) < src.count(")", colon, end))
    ):
        end -= 1
    return end


def _bare_url(state: StateInline, silent: bool) -> bool:
    """Inline rule: take `http(s)://...` in running text as a link.

    Without it, Markdown emphasis would eat the underscores or asterisks of a bare URL
    (`https://x.org/__init__`). It fires on the `:` of `://` like markdown-it's own linkify
    rule, which needs linkify-it-py (not a dependency).
    """
    src, pos = state.src, state.pos
    if silent or state.linkLevel > 0 or not src.startswith("://", pos):
        return False
    pending: str = state.pending
    scheme = next((s for s in ("https", "http") if pending[-len(s) :].lower() == s), "")
    before = pending[: len(pending) - len(scheme)]
    if not scheme or (before and (before[-1].isalnum() or before[-1] in "+-.")):
        return False
    end = bare_url_end(src, pos, state.posMax)
    url = pending[len(before) :] + src[pos:end]
    href = state.md.normalizeLink(url)
    if end == pos + 3 or not state.md.validateLink(href):
        return False
    state.pending = before
    token = state.push("link_open", "a", 1)
    token.attrSet("href", href)
    token.markup, token.info = "linkify", "auto"
    token = state.push("text", "", 0)
    token.content = state.md.normalizeLinkText(url)
    token = state.push("link_close", "a", -1)
    token.markup, token.info = "linkify", "auto"
    state.pos = end
    return True


_CJK = regex.compile(
    r"[\p{East_Asian_Width=Wide}\p{East_Asian_Width=Fullwidth}\p{East_Asian_Width=Halfwidth}"
    r"\p{Script=Hangul}--\p{Emoji_Presentation}]",
    regex.V1,
)
_FIRST_CJK = "\u1100"  # nothing below is CJK, nor a variation selector
_VARIATION_SELECTOR = regex.compile(r"\p{Variation_Selector}")


class _CjkFriendlyState(StateInline):
    def scanDelims(self, start: int, canSplitWord: bool) -> Scanned:
        """CommonMark's scan, widened for `*` and `~` runs next to CJK (module docstring)."""
        scanned = super().scanDelims(start, canSplitWord)
        if not canSplitWord or (scanned.can_open and scanned.can_close):  # `_`, or nothing to widen
            return scanned
        src, before, after = self.src, start - 1, start + scanned.length
        last = src[before] if before >= 0 else " "
        following = src[after] if after < self.posMax else " "
        if last < _FIRST_CJK and following < _FIRST_CJK:
            return scanned
        while before > 0 and _VARIATION_SELECTOR.match(last):
            before -= 1  # a variation selector counts as the character it modifies
            last = src[before]
        if isWhiteSpace(ord(last)) or isWhiteSpace(ord(following)):
            return scanned
        if _CJK.match(last) or _CJK.match(following):
            return Scanned(can_open=True, can_close=True, length=scanned.length)
        return scanned


class _CjkFriendlyInline(ParserInline):
    """markdown-it's inline parser, run on a `_CjkFriendlyState`."""

    def parse(self, src: str, md: MarkdownIt, env: EnvType, tokens: list[Token]) -> list[Token]:
        state = _CjkFriendlyState(src, md, env, tokens)
        self.tokenize(state)
        for rule in self.ruler2.getRules(""):
            rule(state)
        return state.tokens


_MARKDOWN = MarkdownIt()
_MARKDOWN.inline = _CjkFriendlyInline()  # before configure, which picks the preset's rules
_MARKDOWN.configure("commonmark", {"html": False}).enable(["strikethrough", "table"])
_MARKDOWN.inline.ruler.before("linkify", "bare_url", _bare_url)

# A rendered block is a list of lines. A line is (html, indentable): multi-line units such as
# <pre> and <blockquote> are one non-indentable line, so list indentation never alters code.
_Line = tuple[str, bool]


def _join(blocks: Sequence[list[_Line]], blank_line: bool) -> list[_Line]:
    lines: list[_Line] = []
    for block in blocks:
        if lines and blank_line:
            lines.append(("", True))
        lines.extend(block)
    return lines


def _split_lines(html: str) -> list[_Line]:
    return [(line, True) for line in html.split("\n")] if html else []


class _Renderer:
    """Walks markdown-it's block tokens; block nesting is capped by markdown-it (maxNesting)."""

    def __init__(self, tokens: list[Token]) -> None:
        self.tokens = tokens
        self.i = 0
        self.quote_depth = 0

    def blocks(self, close: str | None) -> list[list[_Line]]:
        """Render blocks up to the token of type `close` (consumed) or the end."""
        out: list[list[_Line]] = []
        while self.i < len(self.tokens):
            if self.tokens[self.i].type == close:
                self.i += 1
                break
            block = self.block()
            if block:
                out.append(block)
        return out

    def block(self) -> list[_Line]:
        token = self.tokens[self.i]
        self.i += 1
        kind = token.type
        if kind in ("paragraph_open", "heading_open"):
            html = _render_inline(self.inline(kind.replace("_open", "_close")))
            return _split_lines(f"<b>{html}</b>" if kind == "heading_open" and html else html)
        if kind == "blockquote_open":
            return self.blockquote()
        if kind in ("bullet_list_open", "ordered_list_open"):
            return self.list_block(token)
        if kind in ("fence", "code_block"):
            return _code_block(token)
        if kind == "hr":
            return [(HORIZONTAL_RULE, True)]
        if kind == "table_open":
            return self.table()
        if kind == "inline":
            return _split_lines(_render_inline(token.children or []))
        if kind == "html_block":  # only with html=True; shown as text all the same
            return _split_lines(_escape(token.content.strip()))
        if token.nesting == 1:  # an unknown container (from a plugin): render its content
            return _join(self.blocks(kind.replace("_open", "_close")), blank_line=True)
        return []

    def inline(self, close: str) -> list[Token]:
        """The children of the inline token of a paragraph or heading; skips its close."""
        children: list[Token] = []
        while self.i < len(self.tokens) and self.tokens[self.i].type != close:
            children.extend(self.tokens[self.i].children or [])
            self.i += 1
        self.i += 1
        return children

    def blockquote(self) -> list[_Line]:
        # Telegram can't nest blockquotes: an inner quote becomes part of the outer one.
        self.quote_depth += 1
        lines = _join(self.blocks("blockquote_close"), blank_line=True)
        self.quote_depth -= 1
        if self.quote_depth or not lines:
            return lines
        return [("<blockquote>" + "\n".join(line for line, _ in lines) + "</blockquote>", False)]

    def list_block(self, opening: Token) -> list[_Line]:
        first = self.i
        close = opening.type.replace("_open", "_close")
        ordered = opening.type == "ordered_list_open"
        items: list[list[_Line]] = []
        while self.i < len(self.tokens) and self.tokens[self.i].type != close:
            item = self.tokens[self.i]
            self.i += 1
            marker = f"{item.info}{item.markup} " if ordered else BULLET
            items.append(_list_item(marker, self.blocks("list_item_close")))
        self.i += 1
        # markdown-it hides the paragraphs of tight lists; a loose list keeps blank lines.
        loose = any(
            t.type == "paragraph_open" and t.level == opening.level + 2 and not t.hidden
            for t in self.tokens[first : self.i]
        )
        return _join(items, blank_line=loose)

    def table(self) -> list[_Line]:
        rows: list[list[str]] = []
        aligns: list[str] = []
        header_rows = 0
        while self.i < len(self.tokens):
            token = self.tokens[self.i]
            self.i += 1
            if token.type == "table_close":
                break
            if token.type == "tr_open":
                rows.append([])
            elif token.type == "thead_close":
                header_rows = len(rows)
            elif token.type in ("th_open", "td_open") and len(rows) == 1:
                aligns.append(str(token.attrGet("style") or ""))
            elif token.type == "inline" and rows:
                rows[-1].append(_plain_inline(token.children or []).strip())
        return _format_table(rows, aligns, header_rows)


def _list_item(marker: str, blocks: list[list[_Line]]) -> list[_Line]:
    # Blocks inside an item are separated by a line break; a loose list adds blank lines
    # between items only, which keeps list items compact in a chat bubble.
    lines = _join(blocks, blank_line=False)
    if not lines:
        return [(marker.rstrip(), True)]
    first, indentable = lines[0]
    out = [(marker + first, indentable)]
    out.extend(
        (NESTED_INDENT + line if indentable and line else line, indentable)
        for line, indentable in lines[1:]
    )
    return out


def _code_block(token: Token) -> list[_Line]:
    code = token.content.rstrip()
    if not code.strip():
        return []
    language = token.info.split()[0] if token.info.strip() else ""
    if language:
        opening = f'<pre><code class="language-{_escape_attribute(language)}">'
        return [(f"{opening}{_escape(code)}</code></pre>", False)]
    return [(f"<pre>{_escape(code)}</pre>", False)]


def _format_table(rows: list[list[str]], aligns: list[str], header_rows: int) -> list[_Line]:
    """A Markdown table as an aligned monospace <pre> block (Telegram has no tables)."""
    columns = max((len(row) for row in rows), default=0)
    if not columns:
        return []
    rows = [row + [""] * (columns - len(row)) for row in rows]
    aligns = aligns + [""] * (columns - len(aligns))
    widths = [max(1, *(_display_width(row[c]) for row in rows)) for c in range(columns)]

    def cell(text: str, column: int) -> str:
        pad = widths[column] - _display_width(text)
        if "right" in aligns[column]:
            return " " * pad + text
        if "center" in aligns[column]:
            return " " * (pad // 2) + text + " " * (pad - pad // 2)
        return text + " " * pad

    lines = [" | ".join(cell(text, c) for c, text in enumerate(row)).rstrip() for row in rows]
    if header_rows:
        lines.insert(header_rows, "-+-".join("-" * width for width in widths))
    return [("<pre>" + _escape("\n".join(lines)) + "</pre>", False)]


def _display_width(text: str) -> int:
    """Monospace columns: wide East Asian characters take two, combining marks none."""
    width = 0
    for char in text:
        if unicodedata.combining(char) or unicodedata.category(char) in ("Mn", "Me", "Cf"):
            continue
        width += 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1
    return width


def _render_inline(tokens: list[Token]) -> str:
    """Render inline tokens. A flat loop: emphasis can nest arbitrarily deep."""
    out: list[str] = []
    links: list[tuple[str, bool, int]] = []  # (href, rendered as <a>, index in out)
    for token in tokens:
        kind = token.type
        if kind in _INLINE_TAGS:
            out.append(_INLINE_TAGS[kind])
        elif kind == "code_inline":
            out.append(f"<code>{_escape(token.content)}</code>")
        elif kind in ("softbreak", "hardbreak"):
            out.append("\n")
        elif kind == "link_open":
            href = str(token.attrGet("href") or "")
            linkable = _is_linkable(href) and not links
            if linkable:
                out.append(f'<a href="{_escape_attribute(href)}">')
            links.append((href, linkable, len(out)))
        elif kind == "link_close" and links:
            href, linkable, start = links.pop()
            label = "".join(out[start:])
            shown = _escape(_MARKDOWN.normalizeLinkText(href))
            if not label.strip():
                out.append(shown)
            elif not linkable and href and label != shown:
                out.append(f" ({shown})")  # not a URL Telegram can open: show it as text
            if linkable:
                out.append("</a>")
        elif kind == "image":
            src = str(token.attrGet("src") or "")
            alt = _escape(_plain_inline(token.children or []).strip() or "image")
            if links or not src:
                out.append(alt)
            elif _is_linkable(src):
                out.append(f'<a href="{_escape_attribute(src)}">{alt}</a>')
            else:
                out.append(f"{alt} ({_escape(_MARKDOWN.normalizeLinkText(src))})")
        else:  # text, and anything unexpected (html_inline with html=True) shown as text
            out.append(_escape(token.content))
    return "".join(out)


def _plain_inline(tokens: list[Token]) -> str:
    """Inline tokens as plain text (for table cells and image alt text)."""
    parts: list[str] = []
    for token in tokens:
        if token.type in ("softbreak", "hardbreak"):
            parts.append(" ")
        elif token.type == "image":
            parts.append(_plain_inline(token.children or []))
        else:
            parts.append(token.content)
    return "".join(parts)


# --- splitting -------------------------------------------------------------------------------


class _Splitter:
    """Cuts the plain text of a parsed HTML message and re-emits each piece with its tags.

    Working on the decoded text means a cut can never land inside a tag or an entity; the
    text is re-escaped on output. Lengths are counted in UTF-16 units via a prefix sum.
    """

    def __init__(self, text: str, tags: list[Tag], limit: int) -> None:
        self.text = text
        self.tags = tags
        self.limit = limit
        self.next_tag = 0
        self.open: list[Tag] = []  # tags open at the current position
        self.units: list[int] | None = None  # UTF-16 offset of every code point, if needed
        if telegram_length(text) != len(text):
            widths = (2 if ord(char) > 0xFFFF else 1 for char in text)
            self.units = list(accumulate(widths, initial=0))

    def split(self) -> list[str]:
        text, n = self.text, len(self.text)
        chunks: list[str] = []
        start = self._skip(0, _WHITESPACE, "\n")
        while start < n:
            fit = self._fit(start)
            cut, separator = (n, "") if fit == n else self._cut(start, fit)
            end = cut
            while end > start and text[end - 1] in _WHITESPACE:
                end -= 1
            if text[start:end].strip():
                chunks.append(self._emit(start, end))
            if cut == n:
                break
            # Drop the separator; in code keep the next line's indentation.
            if not separator:  # a hard cut mid-word: nothing to drop
                start = self._skip(cut, "", "")
            else:
                start = self._skip(cut, _WHITESPACE, " " if separator == " " else "\n")
        return chunks

    def _fit(self, start: int) -> int:
        """The largest end such that text[start:end] fits in the limit."""
        if self.units is None:
            return min(len(self.text), start + self.limit)
        return bisect_right(self.units, self.units[start] + self.limit, lo=start) - 1

    def _cut(self, start: int, fit: int) -> tuple[int, str]:
        """Where to cut text[start:...] given it may extend to `fit`; returns (cut, separator)."""
        for separator in ("\n\n", "\n", " "):
            # The separator starts at `cut` and is dropped, so it may begin at `fit` itself.
            cut = self.text.rfind(separator, start + 1, fit + len(separator))
            if cut > start:
                return cut, separator
        return _last_cluster_boundary(self.text, start, fit), ""

    def _skip(self, pos: int, outside_code: str, inside_code: str) -> int:
        """Move past whitespace from `pos`, applying (not emitting) the tags passed over.

        Inside `pre`/`code` only `inside_code` characters are skipped, so that a chunk of code
        starts with its line's indentation.
        """
        while True:
            for _ in self._tags_before(pos, include_start_tags=True):
                pass
            in_code = any(tag.name in ("pre", "code") for tag in self.open)
            if pos < len(self.text) and self.text[pos] in (
                inside_code if in_code else outside_code
            ):
                pos += 1
            else:
                return pos

    def _tags_before(self, pos: int, include_start_tags: bool = False) -> Iterator[Tag]:
        """Tags before text position `pos`, updating `open`.

        End tags at `pos` are included (they close the chunk that ends there); start tags at
        `pos` only if asked (they belong to the chunk that starts there).
        """
        tags = self.tags
        while self.next_tag < len(tags):
            tag = tags[self.next_tag]
            if tag.pos > pos or (tag.pos == pos and not tag.closing and not include_start_tags):
                break
            self.next_tag += 1
            if tag.closing:
                self.open.pop()
            else:
                self.open.append(tag)
            yield tag

    def _emit(self, start: int, end: int) -> str:
        out = [tag.raw for tag in self.open]  # reopen what the previous chunk closed
        pos = start
        for tag in self._tags_before(end):
            out.append(_escape(self.text[pos : tag.pos]))
            out.append(tag.raw)
            pos = tag.pos
        out.append(_escape(self.text[pos:end]))
        out.extend(f"</{tag.name}>" for tag in reversed(self.open))
        return "".join(out)


# Whole grapheme clusters, all but the last one before the end of the text searched.
_CLUSTERS_BUT_THE_LAST = regex.compile(r"\X*(?=\X\Z)")


def _last_cluster_boundary(text: str, start: int, fit: int) -> int:
    """The last grapheme cluster boundary after `start` and at most `fit`, else `fit`.

    `start` is taken as a boundary. Whether `fit` is one depends only on the text up to and
    including text[fit], so the search stops there: the cluster holding text[fit] is the last.
    """
    boundary: int = _CLUSTERS_BUT_THE_LAST.match(text, start, fit + 1).end()
    return boundary if boundary > start else max(fit, start + 1)  # one cluster over the limit


# --- lenient plain text ----------------------------------------------------------------------

_LENIENT_TAG = re.compile(r"</?[A-Za-z][^>]*>")
_LENIENT_ENTITY = re.compile(
    r"&(?:(lt|gt|amp|quot)(?![A-Za-z])|#([0-9]{1,8})|#x([0-9a-fA-F]{1,8}));?"
)


def _decode_lenient(match: re.Match[str]) -> str:
    named, decimal, hexadecimal = match.groups()
    if named:
        return {"lt": "<", "gt": ">", "amp": "&", "quot": '"'}[named]
    code = int(decimal) if decimal else int(hexadecimal, 16)
    if 0 < code < 0x110000 and not 0xD800 <= code <= 0xDFFF:
        return chr(code)
    return match.group(0)
