"""Confinement of model-supplied paths to the workspace.

Every path a tool receives is relative to the workspace root. It is normalised here and refused,
with a message the model can act on, if it could name anything outside the workspace or anything
ambiguous: `..` (also as fullwidth or other look-alike dots, and percent-encoded), names made
only of dots, absolute paths, `~`, backslashes and look-alike slashes, drive letters, NUL and
other control, invisible formatting or unusual space characters, names with a leading or
trailing space or a trailing dot, and overlong paths or names. Keys are only ever built as
`workspace/` + the normalised path, so a sibling prefix such as `workspace_evil/` is
unreachable. What is normalised rather than refused: `./` segments, repeated slashes and
surrounding whitespace. Names that are reserved on Windows (CON, NUL, …) mean nothing to S3 and
are allowed.
"""

from __future__ import annotations

import re
import unicodedata

MAX_PATH_CHARS = 512
MAX_PATH_BYTES = 1000  # S3 keys stop at 1024 bytes, `workspace/` included
MAX_SEGMENT_BYTES = 255
# Cc: control characters incl. NUL; Cf: invisible formatting such as RTL overrides;
# Cs: lone surrogates; Zl/Zp: line and paragraph separators.
_REFUSED_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
_SLASH_LOOKALIKES = frozenset("\u2044\u2215\u2571\u29f8\uff0f\uff3c")
_PERCENT_ENCODED = re.compile(r"%(?:2e|2f|5c|00)", re.IGNORECASE)


class PathError(ValueError):
    """A path the tools refuse. The message is written for the model."""


def normalize_path(path: object, *, allow_root: bool = False) -> str:
    """Return the canonical workspace-relative path ('' for the root when allowed)."""
    if not isinstance(path, str):
        raise PathError("path must be a string relative to the workspace, e.g. memory/MEMORY.md")
    candidate = path.strip()
    if len(candidate) > MAX_PATH_CHARS:
        raise PathError(f"path is longer than {MAX_PATH_CHARS} characters")
    _check_characters(candidate)
    if len(candidate.encode("utf-8")) > MAX_PATH_BYTES:
        raise PathError(f"path is longer than {MAX_PATH_BYTES} bytes")
    if _PERCENT_ENCODED.search(candidate):
        raise PathError(
            "percent-encoded characters (%2e, %2f, …) are not decoded: write paths plainly"
        )
    if candidate.startswith("/"):
        raise PathError(
            f"{candidate!r} is absolute: give a path relative to the workspace, "
            "e.g. memory/MEMORY.md"
        )
    if candidate.startswith("~"):
        raise PathError("'~' is not supported: give a path relative to the workspace")
    if len(candidate) >= 2 and candidate[1] == ":" and candidate[0].isalpha():
        raise PathError("drive letters are not supported: give a path relative to the workspace")

    parts = candidate.split("/")
    if ".." in parts:  # said first: it is what an escaping path most likely meant
        raise PathError("'..' is not allowed: paths must stay inside the workspace")
    segments = []
    for segment in parts:
        if segment in ("", "."):
            continue
        _check_segment(segment)
        segments.append(segment)
    normalized = "/".join(segments)
    if not normalized and not allow_root:
        raise PathError("path is empty: name a file relative to the workspace")
    return normalized


def _check_characters(candidate: str) -> None:
    for char in candidate:
        category = unicodedata.category(char)
        if category in _REFUSED_CATEGORIES:
            raise PathError(f"path contains a control or invisible character (U+{ord(char):04X})")
        if category == "Zs" and char != " ":
            raise PathError(f"path contains an unusual space character (U+{ord(char):04X})")
        if char == "\\":
            raise PathError("use forward slashes (/) in paths, not backslashes")
        if char in _SLASH_LOOKALIKES:
            raise PathError(f"path contains a look-alike of '/' (U+{ord(char):04X}): use '/'")


def _check_segment(segment: str) -> None:
    folded = unicodedata.normalize("NFKC", segment)
    if folded != segment and (set(folded) == {"."} or "/" in folded or "\\" in folded):
        raise PathError(f"{segment!r} looks like {folded!r}: use plain characters in paths")
    if set(segment) == {"."}:
        raise PathError(f"{segment!r} is not a usable name: names cannot be only dots")
    if segment != segment.strip() or segment.endswith("."):
        raise PathError(f"{segment!r} starts or ends with a space or ends with a dot: remove it")
    if len(segment.encode("utf-8")) > MAX_SEGMENT_BYTES:
        raise PathError(f"a path segment is longer than {MAX_SEGMENT_BYTES} bytes")
