"""The grep tool through the registry: regex or literal, scope, format, caps, and errors."""

from __future__ import annotations

import json

import pytest

from nanobot_lambda.core.errors import ToolError
from nanobot_lambda.core.model import ToolCall
from nanobot_lambda.tools.files import (
    MAX_GREP_FILES,
    MAX_GREP_LINE_CHARS,
    MAX_PATTERN_CHARS,
    Grep,
    file_tools,
)
from tests.support.fakes import MemoryWorkspace
from tests.support.job_context import JobTools, job_context


@pytest.fixture
def workspace() -> MemoryWorkspace:
    return MemoryWorkspace(
        {
            "AGENTS.md": "# Agents\nBe brief.\nNever guess a price like $5.00 (ask).\n",
            "memory/MEMORY.md": "# Memory\n- likes Tea\n- dentist: Dr. Moreau\n",
            "memory/HISTORY.md": "# History\n\n[2024-03-05 18:40] Booked the dentist.\n",
            "memory/history/2024-01-01_aaaaaaaaaaaa.md": "[2024-01-01 10:00] Dentist cleaning.\n",
            "notes/a.md": "alpha\nbeta\nalphabet\n",
            "images/cat.png": b"\x89PNG\r\n\x1a\n\x00dentist\xff\xfe",
        }
    )


def grep(workspace: MemoryWorkspace, **arguments: object) -> str:
    registry = JobTools(file_tools(), workspace)
    return registry.execute(ToolCall("call_1", "grep", json.dumps(arguments)))


def test_results_are_path_line_text(workspace: MemoryWorkspace) -> None:
    assert grep(workspace, pattern="alpha").splitlines() == [
        "notes/a.md:1: alpha",
        "notes/a.md:3: alphabet",
    ]


def test_regex_pattern(workspace: MemoryWorkspace) -> None:
    assert grep(workspace, pattern="^alpha$", path="notes") == "notes/a.md:1: alpha"
    assert grep(workspace, pattern=r"\[2024-0[13]-\d\d", path="memory").splitlines() == [
        "memory/HISTORY.md:3: [2024-03-05 18:40] Booked the dentist.",
        "memory/history/2024-01-01_aaaaaaaaaaaa.md:1: [2024-01-01 10:00] Dentist cleaning.",
    ]


def test_literal_pattern_with_regex_metacharacters(workspace: MemoryWorkspace) -> None:
    expected = "AGENTS.md:3: Never guess a price like $5.00 (ask)."
    assert grep(workspace, pattern="$5.00 (ask)", literal=True) == expected
    # As a regex the same text matches nothing ($ anchors, the parentheses group).
    assert grep(workspace, pattern="$5.00 (ask)").startswith("No matches")
    assert grep(workspace, pattern="[2024-03-05", path="memory", literal=True) == (
        "memory/HISTORY.md:3: [2024-03-05 18:40] Booked the dentist."
    )


def test_ignore_case(workspace: MemoryWorkspace) -> None:
    assert grep(workspace, pattern="tea", path="memory").startswith("No matches")
    assert grep(workspace, pattern="tea", path="memory", ignore_case=True) == (
        "memory/MEMORY.md:2: - likes Tea"
    )
    assert grep(workspace, pattern="DENTIST", path="memory", ignore_case=True, literal=True) == (
        "memory/HISTORY.md:3: [2024-03-05 18:40] Booked the dentist.\n"
        "memory/MEMORY.md:3: - dentist: Dr. Moreau\n"
        "memory/history/2024-01-01_aaaaaaaaaaaa.md:1: [2024-01-01 10:00] Dentist cleaning."
    )


def test_a_single_file_a_folder_and_the_root(workspace: MemoryWorkspace) -> None:
    assert grep(workspace, pattern="dentist", path="memory/MEMORY.md") == (
        "memory/MEMORY.md:3: - dentist: Dr. Moreau"
    )
    assert grep(workspace, pattern="dentist", path="memory").splitlines() == [
        "memory/HISTORY.md:3: [2024-03-05 18:40] Booked the dentist.",
        "memory/MEMORY.md:3: - dentist: Dr. Moreau",
    ]
    at_root = grep(workspace, pattern="#")
    assert grep(workspace, pattern="#", path=".") == at_root
    assert grep(workspace, pattern="#", path="./") == at_root
    assert at_root.splitlines() == [
        "AGENTS.md:1: # Agents",
        "memory/HISTORY.md:1: # History",
        "memory/MEMORY.md:1: # Memory",
    ]


def test_a_folder_path_with_a_trailing_slash(workspace: MemoryWorkspace) -> None:
    assert grep(workspace, pattern="alpha$", path="notes/") == "notes/a.md:1: alpha"


def test_max_results_caps_and_says_how_many_more(workspace: MemoryWorkspace) -> None:
    many = MemoryWorkspace({"log.md": "".join(f"hit {n}\n" for n in range(1, 11))})
    result = grep(many, pattern="hit", max_results=3).splitlines()
    assert result == [
        "log.md:1: hit 1",
        "log.md:2: hit 2",
        "log.md:3: hit 3",
        "… 7 more matches not shown; narrow the pattern or the path.",
    ]
    assert len(grep(many, pattern="hit").splitlines()) == 10  # default 50: no "more" line
    assert "more matches" not in grep(many, pattern="hit", max_results=10)


def test_max_results_counts_across_files() -> None:
    workspace = MemoryWorkspace({"a.md": "x\nx\n", "b.md": "x\nx\n"})
    assert grep(workspace, pattern="x", max_results=3).splitlines() == [
        "a.md:1: x",
        "a.md:2: x",
        "b.md:1: x",
        "… 1 more matches not shown; narrow the pattern or the path.",
    ]


def test_max_results_out_of_range_is_an_error(workspace: MemoryWorkspace) -> None:
    assert grep(workspace, pattern="x", max_results=0).startswith("Error: invalid arguments")
    assert grep(workspace, pattern="x", max_results=201).startswith("Error: invalid arguments")


def test_an_invalid_regex_suggests_literal(workspace: MemoryWorkspace) -> None:
    result = grep(workspace, pattern="[2024-03-05")
    assert result.startswith("Error: invalid regular expression")
    assert "literal=true" in result
    assert grep(workspace, pattern="(unclosed").startswith("Error: invalid regular expression")


def test_an_empty_pattern_is_refused(workspace: MemoryWorkspace) -> None:
    assert grep(workspace, pattern="").startswith("Error: invalid arguments for grep")


def test_binary_files_are_skipped(workspace: MemoryWorkspace) -> None:
    assert "images/cat.png" not in grep(workspace, pattern="dentist")
    assert grep(workspace, pattern="dentist", path="images/cat.png").startswith("No matches")
    assert grep(workspace, pattern="dentist", path="images").startswith("No matches")


def test_a_missing_path_is_an_error(workspace: MemoryWorkspace) -> None:
    result = grep(workspace, pattern="x", path="nowhere")
    assert result == "Error: nowhere is neither a file nor a folder with files."
    assert grep(workspace, pattern="x", path="notes/missing.md").startswith("Error:")


def test_a_hostile_path_is_an_error(workspace: MemoryWorkspace) -> None:
    assert grep(workspace, pattern="x", path="../secrets").startswith("Error: '..' is not allowed")


def test_no_matches(workspace: MemoryWorkspace) -> None:
    assert grep(workspace, pattern="zebra") == "No matches for 'zebra' in .."
    assert grep(workspace, pattern="zebra", path="notes") == "No matches for 'zebra' in notes."
    assert grep(MemoryWorkspace(), pattern="zebra") == "No matches for 'zebra' in .."


def test_very_long_lines_are_shown_cut() -> None:
    line = "needle " + "x" * 5_000
    workspace = MemoryWorkspace({"long.md": f"short\n{line}\n"})
    result = grep(workspace, pattern="needle")
    assert result.startswith("long.md:2: needle xxx")
    assert len(result) < 400
    assert result == "long.md:2: " + line[:300]


def test_only_the_searched_prefix_of_a_long_line_matches() -> None:
    line = "x" * (MAX_GREP_LINE_CHARS + 10) + " needle"
    workspace = MemoryWorkspace({"long.md": line})
    assert grep(workspace, pattern="needle").startswith("No matches")


def test_files_left_unsearched_are_not_reported_as_no_matches() -> None:
    files: dict[str, str | bytes] = {
        f"notes/{n:04d}.md": "nothing\n" for n in range(MAX_GREP_FILES)
    }
    files["skills/mine/SKILL.md"] = "the needle\n"
    result = grep(MemoryWorkspace(files), pattern="needle")
    assert not result.startswith("No matches")


def test_a_match_deep_in_a_long_line_is_shown_in_context() -> None:
    line = "y" * 1000 + " the needle is here " + "z" * 500
    result = grep(MemoryWorkspace({"long.md": line}), pattern="needle")
    assert result.startswith("long.md:1: …")
    assert "the needle is here" in result


# -- bounded cost: hostile patterns (ReDoS) ------------------------------------------------------

# Each would run for longer than the universe on a long run of a's (or x's) in a backtracking
# engine searching without a bound; `regex` stops at GREP_LINE_SECONDS of a line.
CUT_OFF = [
    "(a+)+$",  # the classic: 2^n ways to split a run of a's
    "(a|a)*$",
    r"(\w+\s?)+$",
    "(x+x+)+y",
]
# Catastrophic for Python's `re`; `regex` answers them at once.
ANSWERED = ["(a*)*b", "(a|ab)*c", "(.*a){20}", r"^(\d+\.)+$"]


@pytest.mark.parametrize("pattern", CUT_OFF)
def test_an_exponential_search_is_cut_off_with_a_hint(pattern: str) -> None:
    workspace = MemoryWorkspace({"long.md": "a" * 1_990 + "!\n" + "x" * 1_990 + "\n"})
    result = grep(workspace, pattern=pattern)
    assert result.startswith("Error: the pattern took more than 0.25 s on one line (long.md:")
    assert "exponential time" in result and "literal=true" in result


@pytest.mark.parametrize("pattern", ANSWERED)
def test_a_pattern_catastrophic_for_re_is_answered(pattern: str) -> None:
    workspace = MemoryWorkspace({"long.md": "a" * 1_990 + "!\n" + "1." * 995 + "!\n"})
    assert not grep(workspace, pattern=pattern).startswith("Error")


def test_backreferences_are_searched() -> None:
    assert grep(MemoryWorkspace({"a.md": "ab\naa\n"}), pattern=r"(a)\1") == "a.md:2: aa"


def test_an_overlong_pattern_is_refused() -> None:
    result = grep(MemoryWorkspace({"a.md": "a\n"}), pattern="a" * (MAX_PATTERN_CHARS + 1))
    assert result.startswith("Error: invalid arguments for grep")
    # Through the tool's own check too (the schema is the model's first line of defence).
    with pytest.raises(ToolError, match="longer than"):
        Grep().run(job_context(), "b" * (MAX_PATTERN_CHARS + 1))


def test_open_ended_repetitions_search_the_whole_line() -> None:
    assert grep(MemoryWorkspace({"a.md": "abcd\n"}), pattern="a.*b.*c.*d") == "a.md:1: abcd"
    far = "a" * (MAX_GREP_LINE_CHARS - 10) + "x"
    for pattern in (".*.*x", "foo|.*x", r"\w+x", "(a|b)+x"):
        assert grep(MemoryWorkspace({"lines.md": f"{far}\n"}), pattern=pattern).startswith(
            "lines.md:1: aaa"
        )


def test_the_syntax_is_re_s() -> None:
    """`regex` in its version 0: a "[" in a set is a "[", not a nested set."""
    workspace = MemoryWorkspace({"a.md": "x[y\nplain\n"})
    assert grep(workspace, pattern="[[]") == "a.md:1: x[y"
    assert grep(workspace, pattern="[a-z&&[^b]]").startswith("No matches")


class StepClock:
    """A clock that advances one second each time it is read."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        self.now += 1.0
        return self.now


def test_a_search_past_its_time_limit_stops_with_what_it_found() -> None:
    files: dict[str, str | bytes] = {f"notes/{n:02d}.md": "needle\n" * 5 for n in range(20)}
    tool = Grep(time_limit=12, clock=StepClock())
    result = tool.run(job_context(MemoryWorkspace(files)), "needle")
    lines = result.splitlines()
    assert lines[0] == "notes/00.md:1: needle"
    assert 0 < len(lines) - 1 < 100  # some matches, not all of them
    assert lines[-1].startswith("Stopped after 12 s: the pattern is too slow for this much text")
    assert "of 20 files" in lines[-1]
