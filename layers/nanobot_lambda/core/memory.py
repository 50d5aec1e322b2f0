"""Long-term memory in the workspace: MEMORY.md (facts) and HISTORY.md (a log of the past).

HISTORY.md grows for years, so it is kept bounded by rollover: appends are conditional
read-modify-writes of `memory/HISTORY.md` (never losing a concurrent entry), and when the file
passes `ROLLOVER_BYTES` its content is first moved, unchanged, to an archive segment
`memory/history/<first entry's date>_<HHMM>_<content hash>.md` (immutable, named by its content
and so in chronological order; created with If-None-Match, so two writers rolling over the same
content produce one archive). An append therefore costs at most one
download and one upload of a file of bounded size. The model reads the recent log at
`memory/HISTORY.md`, and `grep(path="memory")` searches it together with every archive.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import re
from dataclasses import dataclass

from nanobot_lambda.core.ports import Workspace
from nanobot_lambda.core.workspace import NotText, WriteConflict, update_text

logger = logging.getLogger(__name__)

MEMORY_FILE = "memory/MEMORY.md"
HISTORY_FILE = "memory/HISTORY.md"
HISTORY_ARCHIVE = "memory/history"
HISTORY_HEADER = "# History\n"
ROLLOVER_BYTES = 200_000
# A consolidation may not cut MEMORY.md to less than this share of its size (when it is larger
# than MIN_GUARDED_CHARS): a truncated model output must not wipe memory.
MIN_KEPT_SHARE = 0.5
MIN_GUARDED_CHARS = 400

_ENTRY_START = re.compile(r"^\[\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}", re.MULTILINE)
_MARKER = re.compile(r"\s*<!--.*?-->", re.DOTALL)


@dataclass(frozen=True)
class HistoryEntry:
    source: str  # the file it came from
    text: str


def append_history(workspace: Workspace, entry: str, *, marker: str | None = None) -> bool:
    """Append one entry (ending with `marker`, if given, to make retries idempotent).

    Returns False when an entry with the same marker is already there (in HISTORY.md or in the
    newest archive, where a rollover may have moved it).
    """
    line = entry.strip() + (f" <!-- {marker} -->" if marker else "")
    if marker and _marked(workspace, marker, _newest_archive(workspace)):
        return False
    appended = True
    archived: str | None = None  # what this call already moved to an archive

    def add(current: str | None) -> str | None:
        nonlocal appended, archived
        current = current if current is not None else HISTORY_HEADER
        if marker and f"<!-- {marker} -->" in current:
            appended = False
            return None
        if archived is not None and current.startswith(archived):
            # A retry after a lost race: the archived part is saved; keep only what came after.
            current = HISTORY_HEADER + current[len(archived) :].lstrip("\n")
        elif len(current.encode("utf-8")) > ROLLOVER_BYTES:
            _archive(workspace, current)
            archived = current
            current = HISTORY_HEADER
        return current.rstrip("\n") + "\n\n" + line + "\n"

    update_text(workspace, HISTORY_FILE, add)
    return appended


def find_marker(workspace: Workspace, prefix: str) -> str | None:
    """The first marker starting with `prefix` in HISTORY.md or the newest archive."""
    pattern = re.compile(r"<!-- (" + re.escape(prefix) + r"[^>]*?) -->")
    for path in (HISTORY_FILE, _newest_archive(workspace)):
        text = text_of(workspace, path) if path else ""
        match = pattern.search(text)
        if match:
            return match.group(1)
    return None


def _marked(workspace: Workspace, marker: str, path: str | None) -> bool:
    return path is not None and f"<!-- {marker} -->" in text_of(workspace, path)


def text_of(workspace: Workspace, path: str) -> str:
    """The file's text; "" when it is missing or not text."""
    file = workspace.read(path)
    if file is None:
        return ""
    try:
        return file.text
    except NotText:
        return ""


def _newest_archive(workspace: Workspace) -> str | None:
    archives = history_files(workspace)[:-1]
    return archives[-1] if archives else None


def _archive(workspace: Workspace, content: str) -> None:
    first = _ENTRY_START.search(content)
    stamp = content[first.start() + 1 : first.start() + 17] if first else "0000-00-00 00:00"
    name = stamp.replace(" ", "_").replace("T", "_").replace(":", "")  # 2026-11-22_1005
    digest = hashlib.sha256(content.encode("utf-8")).hexdigest()[:12]
    path = f"{HISTORY_ARCHIVE}/{name}_{digest}.md"
    # A conflict means a concurrent writer archived the very same content (same name).
    with contextlib.suppress(WriteConflict):
        workspace.write(path, content.encode("utf-8"), if_none_match=True)
    logger.info("HISTORY.md rolled over", extra={"archive": path})


def history_files(workspace: Workspace) -> list[str]:
    """Every history file, oldest first: the archives (by name), then HISTORY.md."""
    archives = sorted(
        entry.path for entry in workspace.list_files(HISTORY_ARCHIVE) if entry.path.endswith(".md")
    )
    return [*archives, HISTORY_FILE]


def split_entries(text: str, source: str) -> list[HistoryEntry]:
    """The timestamped entries of a history file, without their markers.

    Text before the first entry (the header) is ignored.
    """
    starts = [match.start() for match in _ENTRY_START.finditer(text)]
    if not starts:
        return []
    return [
        HistoryEntry(source, _MARKER.sub("", text[start:end]).strip())
        for start, end in zip(starts, [*starts[1:], len(text)], strict=True)
    ]


def guard_memory_update(current: str, proposed: str) -> str | None:
    """The text to write to MEMORY.md, or None to leave it as it is.

    None when nothing changed, or when the update would shrink a substantial memory below
    `MIN_KEPT_SHARE` of its size: that is what a truncated or lazy model output looks like.
    """
    if proposed.strip() == current.strip() or not proposed.strip():
        return None
    if len(current) >= MIN_GUARDED_CHARS and len(proposed) < MIN_KEPT_SHARE * len(current):
        logger.warning(
            "MEMORY.md update refused: it would shrink memory from %d to %d characters",
            len(current),
            len(proposed),
        )
        return None
    return proposed.rstrip("\n") + "\n"
