"""What recall indexes, in pieces a question can match: MEMORY.md's entries, HISTORY.md's
entries and the text of uploaded documents.

- MEMORY.md: each list item (with its indented continuation lines) and each paragraph is an
  entry; headings are not entries of their own.
- History: each timestamped entry (core/memory.py: `split_entries`), dated by its timestamp.
- Documents: the extracted text in windows of about `DOCUMENT_CHUNK_CHARS`, cut at a paragraph,
  line or sentence end where there is one, each overlapping the previous by about
  `DOCUMENT_OVERLAP_CHARS` so that a fact on a boundary is whole in one of them.

Every chunk is at most `MAX_CHUNK_CHARS` (a longer entry is cut like a document), so that one
embedding request stays far below any provider's input limit.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

from nanobot_lambda.core.memory import HistoryEntry
from nanobot_lambda.core.recall_index import Chunk, make_chunk

MAX_CHUNK_CHARS = 1_200
DOCUMENT_CHUNK_CHARS = 800
DOCUMENT_OVERLAP_CHARS = 120
_ITEM = re.compile(r"^\s{0,3}(?:[-*+]|\d+[.)])\s+")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s")
_STAMP = re.compile(r"^\[(\d{4}-\d{2}-\d{2})[ T](\d{2}:\d{2})")
_BREAKS = ("\n\n", "\n", ". ", "! ", "? ", "; ", ", ", " ")


def memory_chunks(text: str, origin: str, at: float) -> list[Chunk]:
    """MEMORY.md's entries (dated `at`: when this version was indexed)."""
    entries: list[str] = []
    current: list[str] = []

    def close() -> None:
        if current:
            entries.append(" ".join(line.strip() for line in current).strip())
            current.clear()

    for line in text.splitlines():
        if not line.strip() or _HEADING.match(line):
            close()
        elif _ITEM.match(line):
            close()
            current.append(_ITEM.sub("", line, count=1))
        else:
            current.append(line)
    close()
    return [
        make_chunk("memory", origin, at, piece)
        for entry in entries
        if entry
        for piece in windows(entry, MAX_CHUNK_CHARS, DOCUMENT_OVERLAP_CHARS)
    ]


def history_chunks(entries: list[HistoryEntry], default_at: float) -> list[Chunk]:
    """History entries, each dated by its own timestamp (`default_at` when it has none)."""
    chunks = []
    for entry in entries:
        at = entry_time(entry.text) or default_at
        for piece in windows(entry.text, MAX_CHUNK_CHARS, DOCUMENT_OVERLAP_CHARS):
            chunks.append(make_chunk("history", entry.source, at, piece))
    return chunks


def document_chunks(text: str, origin: str, at: float) -> list[Chunk]:
    return [
        make_chunk("document", origin, at, piece)
        for piece in windows(text, DOCUMENT_CHUNK_CHARS, DOCUMENT_OVERLAP_CHARS)
    ]


def entry_time(text: str) -> float | None:
    """The [YYYY-MM-DD HH:MM] an entry starts with, as seconds since the epoch (read as UTC:
    it only orders entries by age)."""
    match = _STAMP.match(text)
    if match is None:
        return None
    try:
        moment = datetime.fromisoformat(f"{match.group(1)}T{match.group(2)}").replace(tzinfo=UTC)
    except ValueError:
        return None
    return moment.timestamp()


def windows(text: str, size: int, overlap: int) -> list[str]:
    """`text` in pieces of at most `size` characters, cut at the latest natural break in the
    second half of each piece, each starting about `overlap` characters before the previous
    one ended (at a word start)."""
    text = text.strip()
    if len(text) <= size:
        return [text] if text else []
    pieces: list[str] = []
    start = 0
    while start < len(text):
        end = min(len(text), start + size)
        if end < len(text):
            end = _break_before(text, start + size // 2, end)
        piece = text[start:end].strip()
        if piece:
            pieces.append(piece)
        if end >= len(text):
            break
        following = max(start + 1, end - overlap)
        space = text.find(" ", following, end)
        start = space + 1 if space != -1 else end
    return pieces


def _break_before(text: str, earliest: int, end: int) -> int:
    for separator in _BREAKS:
        found = text.rfind(separator, earliest, end)
        if found != -1:
            return found + len(separator)
    return end
