"""How long grep's worst cases take: the per-line bound of accepted patterns, and whole calls.

Random patterns (a seeded grammar of atoms, groups, alternations and quantifiers) are passed
through `bounded_regex.bound`; each accepted one is timed on adversarial lines of the width it
is allowed to search. Prints the share refused, the slowest single-line searches (the bound
aims at about 0.25 s), and the time of grep calls with a catastrophic pattern (refused) and a
costly one over a large workspace.

    make bench            or            .venv/bin/python bench/grep_bound.py [patterns]
"""

from __future__ import annotations

import json
import random
import re
import sys
import time

from nanobot_lambda.core.model import ToolCall
from nanobot_lambda.core.tools import ToolRegistry
from nanobot_lambda.core.workspace import Entry, WorkspaceFile
from nanobot_lambda.tools.bounded_regex import MAX_PATTERN_CHARS, PatternRefused, bound
from nanobot_lambda.tools.files import MAX_GREP_LINE_CHARS, Grep

ATOMS = ["a", "b", ".", r"\w", r"\s", "[ab]", "[^b]", r"\d", "ab"]
QUANTIFIERS = ["", "", "*", "+", "?", "{2,5}", "{1,}", "*?"]


def pattern(rng: random.Random, depth: int = 0) -> str:
    parts = []
    for _ in range(rng.randint(1, 4)):
        if rng.random() < 0.2 and depth < 2:
            inner = pattern(rng, depth + 1)
            if rng.random() < 0.4:
                inner += "|" + pattern(rng, depth + 1)
            atom = f"({inner})"
        else:
            atom = rng.choice(ATOMS)
        parts.append(atom + rng.choice(QUANTIFIERS))
    return "".join(parts)[:MAX_PATTERN_CHARS]


class Files:
    """Just enough of a Workspace for grep: many files of long lines."""

    def __init__(self, files: dict[str, str]) -> None:
        self._files = files

    def refresh(self) -> None:
        pass

    def read(self, path: str, *, fresh: bool = False) -> WorkspaceFile | None:
        text = self._files.get(path)
        return None if text is None else WorkspaceFile(path, text.encode(), '"e"')

    def write(self, *args: object, **kwargs: object) -> str:
        raise NotImplementedError

    def list_dir(self, path: str) -> list[Entry]:
        return self.list_files(path)

    def list_files(self, path: str) -> list[Entry]:
        return [Entry(name, len(text), False) for name, text in sorted(self._files.items())]


def main(count: int) -> None:
    rng = random.Random(7)
    lines = ["a" * MAX_GREP_LINE_CHARS, "ab" * 1000, "a " * 1000, "1" * MAX_GREP_LINE_CHARS]
    lines.append("".join(rng.choice("ab 1") for _ in range(MAX_GREP_LINE_CHARS)))
    timings: list[tuple[float, str, int]] = []
    refused = 0
    for _ in range(count):
        candidate = pattern(rng) + "$"
        try:
            bounded = bound(candidate, 0, MAX_GREP_LINE_CHARS)
        except (PatternRefused, re.error):
            refused += 1
            continue
        worst = 0.0
        for line in lines:
            started = time.perf_counter()
            bounded.regex.search(line[: bounded.searched_chars] + "!")
            worst = max(worst, time.perf_counter() - started)
        timings.append((worst, candidate, bounded.searched_chars))
    timings.sort(reverse=True)
    print(f"{count} random patterns: {refused} refused, {len(timings)} accepted")
    print("slowest single-line searches of accepted patterns (seconds, width, pattern):")
    for seconds, candidate, width in timings[:5]:
        print(f"  {seconds:8.4f}  {width:5d}  {candidate}")

    workspace = Files({f"notes/{n:03d}.md": ("a" * 1500 + "\n") * 200 for n in range(50)})
    for name, hostile in [("catastrophic (a+)+$", "(a+)+$"), ("costly .*.*x", ".*.*x")]:
        started = time.perf_counter()
        call = ToolCall("bench", "grep", json.dumps({"pattern": hostile}))
        result = ToolRegistry([Grep(workspace)]).execute(call)  # type: ignore[arg-type]
        elapsed = time.perf_counter() - started
        print(f"grep {name} over 50 files x 200 lines of 1500 chars: {elapsed:.2f} s")
        print(f"  -> {result.splitlines()[-1][:110]}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 2000)
