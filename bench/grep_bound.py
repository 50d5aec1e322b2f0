"""How long grep's worst cases take: the per-line bound of random patterns, and whole calls.

Random patterns (a seeded grammar of atoms, groups, alternations and quantifiers) are compiled as
grep compiles them (`regex`, version 0) and searched, with grep's per-line timeout
(GREP_LINE_SECONDS of CPU time), on adversarial lines of the longest width grep searches. Prints
how many were cut off by the timeout, the median, p95 and slowest single-line searches (in CPU
time, which the timeout counts: a busy machine stretches the wall clock), and the wall time of
grep calls with a catastrophic pattern (cut off on its first line) and a costly one over a large
workspace.

    make bench            or            .venv/bin/python bench/grep_bound.py [patterns]
"""

from __future__ import annotations

import json
import random
import statistics
import sys
import time

import regex  # type: ignore[import-untyped]

from nanobot_lambda.core.model import ToolCall
from nanobot_lambda.core.tools import ToolRegistry
from nanobot_lambda.core.workspace import Entry, WorkspaceFile
from nanobot_lambda.tools.files import (
    GREP_LINE_SECONDS,
    MAX_GREP_LINE_CHARS,
    MAX_PATTERN_CHARS,
    Grep,
)

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
    width = MAX_GREP_LINE_CHARS - 1  # the line and the "!" that fails every "$"
    lines = ["a" * width, "ab" * (width // 2), "a " * (width // 2), "1" * width]
    lines.append("".join(rng.choice("ab 1") for _ in range(width)))
    timings: list[tuple[float, str]] = []
    cut_off = 0
    for _ in range(count):
        candidate = pattern(rng) + "$"
        compiled = regex.compile(candidate, regex.V0)
        worst, timed_out = 0.0, False
        for line in lines:
            started = time.process_time()
            try:
                compiled.search(line + "!", timeout=GREP_LINE_SECONDS)
            except TimeoutError:
                timed_out = True
            worst = max(worst, time.process_time() - started)
            if timed_out:
                break  # as grep stops at the first line cut off
        cut_off += timed_out
        timings.append((worst, candidate))
    timings.sort(reverse=True)
    seconds = sorted(worst for worst, _ in timings)
    print(f"{count} random patterns: {cut_off} cut off after {GREP_LINE_SECONDS:g} s of a line")
    print(
        f"slowest line of each pattern (CPU): median {statistics.median(seconds):.4f} s, "
        f"p95 {seconds[int(0.95 * (len(seconds) - 1))]:.4f} s, max {seconds[-1]:.4f} s"
    )
    print("slowest single-line searches (seconds, pattern):")
    for worst, candidate in timings[:5]:
        print(f"  {worst:8.4f}  {candidate}")

    workspace = Files({f"notes/{n:03d}.md": ("a" * 1500 + "\n") * 200 for n in range(50)})
    for name, hostile in [("catastrophic (a+)+!", "(a+)+!"), ("costly .*.*x", ".*.*x")]:
        started = time.perf_counter()
        call = ToolCall("bench", "grep", json.dumps({"pattern": hostile}))
        result = ToolRegistry([Grep(workspace)]).execute(call)  # type: ignore[arg-type]
        elapsed = time.perf_counter() - started
        print(f"grep {name} over 50 files x 200 lines of 1500 chars: {elapsed:.2f} s")
        print(f"  -> {result.splitlines()[-1][:110]}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 2000)
