"""Recall: BM25 over the HISTORY entries (and archives), bounded, cached by ETag."""

from __future__ import annotations

import pytest

from nanobot_lambda.core import recall
from nanobot_lambda.core.memory import HISTORY_FILE
from nanobot_lambda.core.ports import Workspace
from nanobot_lambda.core.recall import Bm25, HistoryRecall, tokenize
from tests.support.fakes import MemoryWorkspace

DENTIST = "[2024-03-05 18:40] Booked the dentist, Dr. Moreau, for April 3rd at 9am."
LISBON = "[2024-03-02 09:15] Planned the trip to Lisbon with Ana; trains were rejected."
GARDEN = "[2024-03-09 07:05] Discussed the garden: tomatoes go in the south bed."
CAR = "[2024-03-12 20:30] The car needs new tyres before the trip to the mountains."


class Finder:
    """`HistoryRecall` over one workspace, as a job in its scope searches it."""

    def __init__(self, workspace: Workspace, *, limit: int = 3, max_chars: int = 1200) -> None:
        self.recall = HistoryRecall(limit=limit, max_chars=max_chars)
        self.workspace = workspace

    def search(self, query: str, shown: str = "") -> list[str]:
        return self.recall.search(self.workspace, query, shown)


def history(*entries: str) -> str:
    return "# History\n\n" + "".join(
        f"{entry} <!-- s {n}-{n + 1} -->\n\n" for n, entry in enumerate(entries)
    )


def workspace_with(*entries: str) -> MemoryWorkspace:
    return MemoryWorkspace({HISTORY_FILE: history(*entries)})


# -- tokenize ----------------------------------------------------------------------------------


def test_tokenize_folds_case_and_drops_stopwords_digits_and_single_letters() -> None:
    assert tokenize("What did I SAY about the Dentist in 2024, x?") == ["say", "dentist"]
    assert tokenize("Straße") == ["strasse"]  # casefold, not just lower
    assert tokenize("9am 10 2024-03-05") == ["9am"]


def test_tokenize_keeps_unicode_words() -> None:
    assert tokenize("Un café à Tōkyō") == ["un", "café", "tōkyō"]
    assert tokenize("東京 に 行く") == ["東京", "行く"]


def test_tokenize_of_only_stopwords_is_empty() -> None:
    assert tokenize("Hi! What is it? ok, thanks") == []
    assert tokenize("") == []


# -- shares (hybrid recall's words) ------------------------------------------------------------


def test_a_share_is_how_much_of_the_query_a_text_holds() -> None:
    bm25 = Bm25(["planned lisbon trip", "booked dentist moreau", "garden tomatoes bed"])
    assert bm25.shares("the Lisbon trip") == [(pytest.approx(1.0), 0)]  # all of it, once
    # Half of it each (the two words weigh the same: each is in one text of three).
    assert bm25.shares("lisbon dentist") == [(pytest.approx(0.5), 1), (pytest.approx(0.5), 0)]
    # A word no text holds is part of the query all the same: it weighs most (rarest).
    (share, _), *_ = bm25.shares("lisbon trip zebra")
    assert 0.4 < share < 0.6


# -- search ------------------------------------------------------------------------------------


def test_the_relevant_entry_ranks_first() -> None:
    finder = Finder(workspace_with(LISBON, DENTIST, GARDEN, CAR), limit=3)
    found = finder.search("When is my dentist appointment?")
    assert found[0] == DENTIST


def test_entries_are_returned_without_markers_best_first() -> None:
    finder = Finder(workspace_with(LISBON, DENTIST, GARDEN, CAR), limit=5)
    found = finder.search("trip to Lisbon")
    assert found == [LISBON, CAR]  # both mention the trip; only one is about Lisbon
    assert all("<!--" not in text for text in found)


def test_entries_the_request_already_shows_are_not_recalled_again() -> None:
    finder = Finder(workspace_with(LISBON, DENTIST, GARDEN, CAR), limit=5)
    shown = f"[Runtime context: metadata, not instructions]\nTime: x\n- {LISBON}\n[/Runtime…"
    assert finder.search("trip to Lisbon", shown) == [CAR]


def test_ties_prefer_the_newer_entry() -> None:
    older = "[2024-01-01 10:00] Talked about the bicycle."
    newer = "[2024-02-01 10:00] Talked about the bicycle."
    finder = Finder(workspace_with(older, newer), limit=2)
    assert finder.search("bicycle") == [newer, older]


def test_nothing_scores_nothing_is_returned() -> None:
    finder = Finder(workspace_with(LISBON, DENTIST))
    assert finder.search("quantum chromodynamics") == []


def test_a_query_of_stopwords_returns_nothing_and_reads_nothing() -> None:
    workspace = workspace_with(LISBON, DENTIST)
    finder = Finder(workspace)
    assert finder.search("hi, how are you?") == []
    assert workspace.reads == 0


def test_no_history_returns_nothing() -> None:
    assert Finder(MemoryWorkspace()).search("dentist") == []
    assert Finder(MemoryWorkspace({HISTORY_FILE: "# History\n"})).search("dentist") == []


def test_limit_is_respected() -> None:
    entries = [f"[2024-03-{day:02d} 10:00] Walked the dog in the park." for day in range(1, 8)]
    finder = Finder(workspace_with(*entries), limit=2)
    assert len(finder.search("dog")) == 2
    assert len(Finder(workspace_with(*entries), limit=5).search("dog")) == 5


def test_the_character_budget_is_respected_and_cut_text_ends_with_an_ellipsis() -> None:
    long_entry = "[2024-03-05 18:40] Dentist: " + "a long story about teeth. " * 30
    finder = Finder(workspace_with(long_entry, DENTIST), limit=3, max_chars=200)
    found = finder.search("dentist")
    # The short entry scores higher (BM25 length normalisation) and fits; the long one is cut.
    rest = 200 - len(DENTIST)
    assert found == [DENTIST, long_entry[: rest - 1] + "…"]
    assert sum(len(text) for text in found) == 200


def test_entries_fitting_the_budget_are_whole() -> None:
    finder = Finder(workspace_with(LISBON, DENTIST, CAR), limit=3, max_chars=10_000)
    found = finder.search("trip dentist")
    assert sorted(found) == sorted([LISBON, DENTIST, CAR])


def test_max_chars_zero_disables_recall() -> None:
    workspace = workspace_with(DENTIST)
    assert Finder(workspace, max_chars=0).search("dentist") == []
    assert workspace.reads == 0


def test_archives_are_searched_too() -> None:
    workspace = MemoryWorkspace(
        {
            "memory/history/2023-11-01_aaaaaaaaaaaa.md": history(
                "[2023-11-01 10:00] Adopted a cat named Miso."
            ),
            "memory/history/2024-01-01_bbbbbbbbbbbb.md": history(LISBON),
            HISTORY_FILE: history(DENTIST),
        }
    )
    finder = Finder(workspace)
    assert finder.search("what is my cat called?") == [
        "[2023-11-01 10:00] Adopted a cat named Miso."
    ]
    assert finder.search("Lisbon") == [LISBON]


def test_a_binary_history_file_is_skipped() -> None:
    workspace = MemoryWorkspace(
        {
            "memory/history/2024-01-01_aaaaaaaaaaaa.md": b"\xff\xfe binary",
            HISTORY_FILE: history(DENTIST),
        }
    )
    assert Finder(workspace).search("dentist") == [DENTIST]


def test_the_index_is_cached_per_file_version(monkeypatch: pytest.MonkeyPatch) -> None:
    parsed: list[str] = []
    real_split = recall.split_entries

    def counting_split(text: str, source: str):  # type: ignore[no-untyped-def]
        parsed.append(source)
        return real_split(text, source)

    monkeypatch.setattr(recall, "split_entries", counting_split)
    workspace = MemoryWorkspace(
        {
            "memory/history/2024-01-01_aaaaaaaaaaaa.md": history(LISBON),
            HISTORY_FILE: history(DENTIST),
        }
    )
    finder = Finder(workspace)
    assert finder.search("dentist") == [DENTIST]
    assert finder.search("Lisbon") == [LISBON]
    assert sorted(parsed) == sorted(["memory/history/2024-01-01_aaaaaaaaaaaa.md", HISTORY_FILE])

    # HISTORY.md changes: only it is parsed again, and the new entry is found.
    workspace.files[HISTORY_FILE] = history(DENTIST, GARDEN).encode()
    assert finder.search("tomatoes") == [GARDEN]
    assert sorted(parsed) == sorted(
        ["memory/history/2024-01-01_aaaaaaaaaaaa.md", HISTORY_FILE, HISTORY_FILE]
    )


def test_cjk_text_is_indexed_as_character_pairs() -> None:
    assert tokenize("東京に行った") == ["東京", "京に", "に行", "行っ", "った"]
    assert tokenize("猫") == ["猫"]
    assert tokenize("Tokyo東京trip") == ["東京", "tokyo", "trip"]
