"""Reading the whole history back, for assertions (the product reads it through recall)."""

from __future__ import annotations

from nanobot_lambda.core.memory import HistoryEntry, split_entries
from nanobot_lambda.core.ports import Workspace
from nanobot_lambda.core.workspace import NotText


def read_history(workspace: Workspace, paths: list[str]) -> list[HistoryEntry]:
    entries: list[HistoryEntry] = []
    for path in paths:
        file = workspace.read(path)
        if file is None:
            continue
        try:
            entries.extend(split_entries(file.text, path))
        except NotText:
            continue
    return entries
