"""A corpus of hostile workspace paths, with what each must come to.

`REFUSED`: (path, a fragment of the refusal the model reads). `NORMALISED`: (path, the
workspace-relative path it safely stands for). Used by the unit tests (`normalize_path` and
every file tool) and by the integration test against the S3 workspace on moto server.
"""

from __future__ import annotations

from typing import Any


def tool_calls(path: str) -> dict[str, dict[str, Any]]:
    """The arguments of a call to each file tool with `path`: a write, then an edit of it."""
    return {
        "read_file": {"path": path},
        "write_file": {"path": path, "content": "written"},
        "edit_file": {"path": path, "old_text": "written", "new_text": "edited"},
        "list_dir": {"path": path},
        "grep": {"pattern": "SECRET|written|edited", "path": path},
    }


REFUSED: list[tuple[str, str]] = [
    # parent references
    ("../secrets.txt", "'..' is not allowed"),
    ("..", "'..' is not allowed"),
    ("memory/../../x", "'..' is not allowed"),
    ("a/../../b", "'..' is not allowed"),
    ("./../x", "'..' is not allowed"),
    ("../workspace_evil/x", "'..' is not allowed"),
    ("memory/..", "'..' is not allowed"),
    ("skills/weather/../../../outside.md", "'..' is not allowed"),
    ("memory/link -> ../../x", "'..' is not allowed"),  # symlink-ish: still a '..' segment
    # absolute, home, drives
    ("/etc/passwd", "is absolute"),
    ("/workspace/AGENTS.md", "is absolute"),
    ("//server/share/x", "is absolute"),
    ("~/notes.md", "'~' is not supported"),
    ("~root/.ssh/id_rsa", "'~' is not supported"),
    ("C:/Windows/win.ini", "drive letters"),
    ("c:notes", "drive letters"),
    # backslashes and look-alike slashes
    ("..\\windows\\system32", "not backslashes"),
    ("memory\\MEMORY.md", "not backslashes"),
    ("memory\uff0f..\uff0fx", "look-alike of '/'"),  # fullwidth solidus
    ("a\u2215..\u2215b", "look-alike of '/'"),  # division slash
    ("a\u2044b", "look-alike of '/'"),  # fraction slash
    # percent-encoding is not decoded, and its traversal vocabulary is refused
    ("%2e%2e/secrets", "percent-encoded"),
    ("memory/%2E%2E%2Fx", "percent-encoded"),
    ("..%2fx", "percent-encoded"),
    ("notes%00.md", "percent-encoded"),
    # Unicode look-alikes of dots
    ("\uff0e\uff0e/x", "looks like '..'"),  # fullwidth full stops
    ("memory/\u2025/x", "looks like '..'"),  # two dot leader
    ("\u2024\u2024", "looks like '..'"),  # one dot leaders
    # names of dots only, trailing dots and spaces
    ("...", "only dots"),
    ("memory/..../x", "only dots"),
    ("notes.md.", "ends with a dot"),
    ("memory./x", "ends with a dot"),
    ("memory /MEMORY.md", "space"),
    ("notes/ x.md", "space"),
    # control, invisible and unusual characters
    ("memory/MEMORY.md\x00.png", "control or invisible"),
    ("notes\n.md", "control or invisible"),
    ("tab\there", "control or invisible"),
    ("\x7fdelete", "control or invisible"),
    ("\x1b[31mred.md", "control or invisible"),
    ("evil\u202etxt.md", "control or invisible"),  # right-to-left override
    ("zero\u200bwidth", "control or invisible"),  # zero-width space
    ("bom\ufeff.md", "control or invisible"),
    ("line\u2028break", "control or invisible"),
    ("lone\ud800surrogate", "control or invisible"),
    ("no\u00a0break", "unusual space"),
    ("ideographic\u3000space", "unusual space"),
    # overlong
    ("a" * 600, "longer than 512 characters"),
    ("dir/" + "b" * 300, "longer than 255 bytes"),
    ("\U0001f600" * 300, "longer than 1000 bytes"),  # 300 characters, 1200 bytes
    # empty
    ("", "empty"),
    ("   ", "empty"),
    (".", "empty"),
    ("./", "empty"),
    ("/", "is absolute"),
]

NORMALISED: list[tuple[str, str]] = [
    ("memory/MEMORY.md", "memory/MEMORY.md"),
    ("./memory//MEMORY.md", "memory/MEMORY.md"),
    ("  AGENTS.md ", "AGENTS.md"),
    ("a/./b", "a/b"),
    ("notes/", "notes"),
    ("..hidden", "..hidden"),  # a name starting with dots is not a parent reference
    ("notes/..draft.md", "notes/..draft.md"),
    ("notes/日記.md", "notes/日記.md"),
    ("notes/100%.md", "notes/100%.md"),  # a plain percent sign is just a character
    ("CON", "CON"),  # reserved on Windows, meaningless to S3: stays inside workspace/
    ("notes/nul.txt", "notes/nul.txt"),
    ("aux/com1.md", "aux/com1.md"),
]
