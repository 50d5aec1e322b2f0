"""Memory: a scope's MEMORY.md to read and edit, its versions, restore; HISTORY.md searched.

The edit is a conditional write on the version the editor read (S3's ETag): a turn that wrote
MEMORY.md meanwhile (a consolidation, the model's edit_file) is never overwritten; the editor is
answered 409 with the text as it is now, and says so. The versions and the restore are
`/memory`'s (core/memory_versions.py); a restore names its press (`request`, the page's id for
it), so a press sent again restores nothing twice.

History is searched by words (BM25, core/recall.py), as a turn recalls without
EMBEDDING_MODEL: hybrid recall would embed the query through litellm, which the console never
imports (README "Console").
"""

from __future__ import annotations

from typing import Any

from nanobot_lambda.core.memory import MEMORY_FILE, HistoryEntry
from nanobot_lambda.core.memory_versions import restore_by_id, version_diffs
from nanobot_lambda.core.recall import Bm25, HistoryRecall
from nanobot_lambda.core.workspace import NotText, WriteConflict
from nanobot_lambda.functions.console.auth import ChatScope
from nanobot_lambda.functions.console.ports import ConsoleError, ConsolePorts
from nanobot_lambda.functions.console.requests import text_field

MEMORY_MAX_CHARS = 200_000
HISTORY_SHOWN = 30  # the newest entries, or the best matches
HISTORY_ENTRY_CHARS = 2_000


class MemoryViews:
    def __init__(self, ports: ConsolePorts) -> None:
        self._ports = ports

    def memory(self, target: ChatScope, body: dict[str, Any]) -> dict[str, Any]:
        file = self._ports.workspace(target.scope).read(MEMORY_FILE, fresh=True)
        return _memory_answer(file)

    def save(self, target: ChatScope, body: dict[str, Any]) -> dict[str, Any]:
        text = text_field(body, "text", MEMORY_MAX_CHARS, empty=True)
        version = body.get("version")
        if version is not None and not isinstance(version, str):
            raise ConsoleError(400, "version must be the version read")
        files = self._ports.workspace(target.scope)
        data = (text.rstrip("\n") + "\n").encode("utf-8") if text.strip() else b""
        try:
            if version:
                files.write(MEMORY_FILE, data, if_match=version)
            else:
                files.write(MEMORY_FILE, data, if_none_match=True)
        except WriteConflict:
            current = _memory_answer(files.read(MEMORY_FILE, fresh=True))
            raise ConsoleError(
                409, "MEMORY.md changed since you opened it: not saved", **current
            ) from None
        return _memory_answer(files.read(MEMORY_FILE, fresh=True))

    def versions(self, target: ChatScope, body: dict[str, Any]) -> dict[str, Any]:
        files = self._ports.workspace(target.scope)
        return {
            "versions": [
                {
                    "id": line.version.version_id,
                    "number": line.number,
                    "when": line.version.modified.isoformat(timespec="seconds"),
                    "size": line.version.size,
                    "deleted": line.version.deleted,
                    "added": line.added,
                    "removed": line.removed,
                    "diff": diff,
                }
                for line, diff in version_diffs(files)
            ]
        }

    def restore(self, target: ChatScope, body: dict[str, Any]) -> dict[str, Any]:
        version_id = text_field(body, "version_id", 1024)
        request = text_field(body, "request", 100)
        outcome = restore_by_id(
            self._ports.workspace(target.scope), version_id, request=f"console-{request}"
        )
        if outcome == "conflict":
            raise ConsoleError(409, "MEMORY.md changed meanwhile: look again, then restore")
        if outcome == "no_such":
            raise ConsoleError(404, "no such version (it may have expired)")
        if outcome == "expired":
            raise ConsoleError(410, "that version has expired")
        return {"outcome": outcome}

    def history(self, target: ChatScope, body: dict[str, Any]) -> dict[str, Any]:
        query = text_field(body, "query", 500, empty=True, required=False)
        _, entries = HistoryRecall().entries(self._ports.workspace(target.scope))
        chosen: list[tuple[HistoryEntry, float | None]]
        if query.strip():
            ranking = Bm25([entry.text for entry in entries]).ranked(query)
            chosen = [(entries[position], round(score, 2)) for score, position in ranking]
        else:
            chosen = [(entry, None) for entry in reversed(entries)]  # newest first
        return {
            "entries": [
                {"source": entry.source, "text": entry.text[:HISTORY_ENTRY_CHARS], "score": score}
                for entry, score in chosen[:HISTORY_SHOWN]
            ],
            "total": len(entries),
        }


def _memory_answer(file: Any) -> dict[str, Any]:
    if file is None:
        return {"text": "", "version": ""}
    try:
        text = file.text
    except NotText:
        text = ""
    return {"text": text, "version": file.etag}
