"""Confinement of model-supplied paths to the workspace.

Every path a tool receives is relative to the workspace root. It is normalised here and refused,
with a message the model can act on, if it could name anything outside the workspace or anything
ambiguous: `..`, absolute paths, `~`, backslashes, drive letters, NUL and other control or
invisible formatting characters, and overlong paths. Keys are only ever built as
`workspace/` + the normalised path, so a sibling prefix such as `workspace_evil/` is unreachable.
"""

from __future__ import annotations

import unicodedata

MAX_PATH_CHARS = 512
MAX_SEGMENT_BYTES = 255


class PathError(ValueError):
    """A path the tools refuse. The message is written for the model."""


def normalize_path(path: object, *, allow_root: bool = False) -> str:
    """Return the canonical workspace-relative path ('' for the root when allowed)."""
    if not isinstance(path, str):
        raise PathError("path must be a string relative to the workspace, e.g. memory/MEMORY.md")
    candidate = path.strip()
    if len(candidate) > MAX_PATH_CHARS:
        raise PathError(f"path is longer than {MAX_PATH_CHARS} characters")
    for char in candidate:
        # Cc: control characters incl. NUL; Cf: invisible formatting such as RTL overrides.
        if unicodedata.category(char) in ("Cc", "Cf"):
            raise PathError(f"path contains a control character (U+{ord(char):04X})")
    if "\\" in candidate:
        raise PathError("use forward slashes (/) in paths, not backslashes")
    if candidate.startswith("/"):
        raise PathError(
            f"{candidate!r} is absolute: give a path relative to the workspace, "
            "e.g. memory/MEMORY.md"
        )
    if candidate.startswith("~"):
        raise PathError("'~' is not supported: give a path relative to the workspace")
    if len(candidate) >= 2 and candidate[1] == ":" and candidate[0].isalpha():
        raise PathError("drive letters are not supported: give a path relative to the workspace")

    segments = []
    for segment in candidate.split("/"):
        if segment in ("", "."):
            continue
        if segment == "..":
            raise PathError("'..' is not allowed: paths must stay inside the workspace")
        if len(segment.encode("utf-8")) > MAX_SEGMENT_BYTES:
            raise PathError(f"a path segment is longer than {MAX_SEGMENT_BYTES} bytes")
        segments.append(segment)
    normalized = "/".join(segments)
    if not normalized and not allow_root:
        raise PathError("path is empty: name a file relative to the workspace")
    return normalized
