"""Hybrid recall: indexing off the reply path, fused rankings, fallbacks, races and scopes."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime
from decimal import Decimal

import pytest

from nanobot_lambda.core.errors import StorageError
from nanobot_lambda.core.hybrid_recall import (
    WRITE_ATTEMPTS,
    HybridRecall,
    RecallIndexer,
    RecallLimits,
    ScopeIndexes,
    index_quietly,
)
from nanobot_lambda.core.memory import HISTORY_FILE, MEMORY_FILE
from nanobot_lambda.core.ports import Embedder
from nanobot_lambda.core.recall import HistoryRecall
from nanobot_lambda.core.recall_index import IndexUpdate, decode, make_chunk, quantize
from nanobot_lambda.core.scopes import OWNER, Scope
from nanobot_lambda.core.spend import SpendLimits
from nanobot_lambda.core.subjects import Subject
from nanobot_lambda.core.usage import UsageMeter
from tests.support.embedding_server import embed
from tests.support.fakes import (
    MemoryRecallIndexObjects,
    MemoryUsageStore,
    MemoryWorkspace,
    RecordingMetrics,
    StandInEmbedder,
)

MODEL = "stand-in"
NOW = datetime(2026, 11, 26, 9, 0, tzinfo=UTC).timestamp()
DENTIST = "[2026-10-05 18:40] Booked the dentist, Dr. Moreau, for December 3rd at 9am."
LISBON = "[2026-10-02 09:15] Planned the trip to Lisbon with Ana; trains were rejected."
GARDEN = "[2026-10-09 07:05] Discussed the garden: tomatoes go in the south bed."
PARAPHRASE = "When do I see someone about my teeth?"  # no word of DENTIST's


class InScope:
    """A `HybridRecall` as a job in `scope` uses it: that scope's workspace, that embedder."""

    def __init__(
        self,
        workspace: MemoryWorkspace,
        scope: Scope,
        indexes: ScopeIndexes,
        embedder: Embedder,
        limits: RecallLimits | None = None,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.recall = HybridRecall(indexes, limits, clock=clock)
        self.workspace, self.scope, self.embedder = workspace, scope, embedder

    def search(self, query: str, shown: str = "") -> list[str]:
        return self.recall.search(
            query, shown, workspace=self.workspace, scope=self.scope, embedder=self.embedder
        )

    def prepare(self) -> None:
        self.recall.prepare(self.workspace, self.scope)


def history(*entries: str) -> str:
    return "# History\n\n" + "".join(f"{entry}\n\n" for entry in entries)


class Setup:
    def __init__(self, files: dict[str, str | bytes] | None = None, scope: Scope = OWNER) -> None:
        self.workspace = MemoryWorkspace(files or {HISTORY_FILE: history(LISBON, DENTIST, GARDEN)})
        self.objects = MemoryRecallIndexObjects()
        self.embedder = StandInEmbedder(MODEL)
        self.scope = scope
        self.indexes = ScopeIndexes(self.objects, MODEL)
        self.indexer = RecallIndexer(self.indexes, self.embedder, clock=lambda: NOW)
        self.recall = InScope(
            self.workspace, self.scope, self.indexes, self.embedder, clock=lambda: NOW
        )

    def index(self) -> None:
        self.indexer.index_scope(self.scope, self.workspace)


def test_a_paraphrase_bm25_misses_is_recalled_by_meaning() -> None:
    setup = Setup()
    assert HistoryRecall().search(setup.workspace, PARAPHRASE) == []  # no shared word
    setup.index()
    assert setup.recall.search(PARAPHRASE)[0] == DENTIST


def test_a_literal_question_still_finds_its_entry_first() -> None:
    setup = Setup()
    setup.index()
    assert setup.recall.search("the trip to Lisbon")[0] == LISBON


def test_words_shared_by_chance_do_not_outrank_the_entry_closest_in_meaning() -> None:
    # Each shares "see" and "someone" with the question and is less close to it in meaning than
    # DENTIST (similarity 0.30-0.32 against 0.39; all above the 0.3 floor). Rank fusion put
    # every one of them, found by both rankings, above DENTIST, found by meaning alone.
    chance = [
        "[2026-06-01 10:00] Asked someone to see about the broken gate.",
        "[2026-06-02 10:00] Went to see someone about my bike.",
        "[2026-06-03 10:00] Went to see someone about the boiler.",
    ]
    setup = Setup({HISTORY_FILE: history(*chance, LISBON, DENTIST, GARDEN)})
    setup.index()
    assert setup.recall.search(PARAPHRASE)[0] == DENTIST


def test_an_entry_not_embedded_yet_is_recalled_by_its_words() -> None:
    setup = Setup()
    setup.index()
    newer = "[2026-11-25 20:00] Ordered a walnut desk for the study."
    setup.workspace.write(HISTORY_FILE, history(LISBON, DENTIST, GARDEN, newer).encode())
    assert setup.recall.search("the walnut desk for the study")[0] == newer
    assert setup.recall.search(PARAPHRASE)[0] == DENTIST


def test_indexing_embeds_only_what_is_new_and_drops_memory_entries_that_are_gone() -> None:
    setup = Setup(
        {HISTORY_FILE: history(DENTIST), MEMORY_FILE: "- Likes green tea.\n- Owns a cat.\n"}
    )
    first = setup.indexer.index_scope(OWNER, setup.workspace)
    assert (first.added, first.removed) == (3, 0)
    calls = len(setup.embedder.calls)
    assert setup.indexer.index_scope(OWNER, setup.workspace).added == 0
    assert len(setup.embedder.calls) == calls  # nothing embedded again

    setup.workspace.files[MEMORY_FILE] = b"- Likes green tea.\n- Owns a dog now.\n"
    second = setup.indexer.index_scope(OWNER, setup.workspace)
    assert (second.added, second.removed) == (1, 1)
    assert setup.embedder.calls[-1] == ["Owns a dog now."]
    stored = decode(setup.objects.objects[OWNER])
    assert sorted(chunk.text for chunk in stored.chunks) == sorted(
        [DENTIST, "Likes green tea.", "Owns a dog now."]
    )


def test_a_document_is_indexed_and_shown_with_its_file_name() -> None:
    setup = Setup()
    setup.indexer.add_document(OWNER, "uploads/1/2026-11/lease.pdf.txt", "The landlord wants rent.")
    assert setup.recall.search("what does my lease say about the apartment payments")[0] == (
        "(lease.pdf.txt) The landlord wants rent."
    )


def test_memory_the_prompt_shows_already_is_not_recalled() -> None:
    setup = Setup({MEMORY_FILE: "- Allergic to peanuts.\n"})
    setup.index()
    assert setup.recall.search("any nut allergy?") == []
    assert setup.recall.search("any nut allergy?", shown="") == []


def test_an_entry_the_request_shows_already_is_not_repeated() -> None:
    setup = Setup()
    setup.index()
    assert DENTIST not in setup.recall.search(PARAPHRASE, shown=f"- {DENTIST}")


def test_the_newer_of_two_equal_entries_ranks_first() -> None:
    old = "[2025-01-01 10:00] Bought bread at the bakery."
    new = "[2026-11-20 10:00] Bought bread at the bakery!"
    setup = Setup({HISTORY_FILE: history(new, old)})  # the newer one first in the file
    setup.index()
    assert setup.recall.search("bread from the bakery")[:2] == [new, old]


def test_the_budget_bounds_what_is_recalled() -> None:
    setup = Setup()
    setup.index()
    setup.recall = InScope(
        setup.workspace, OWNER, setup.indexes, setup.embedder, RecallLimits(3, 60)
    )
    found = setup.recall.search(PARAPHRASE)
    assert sum(len(text) for text in found) <= 60 and found[0].endswith("…")


# -- cost and failures ---------------------------------------------------------------------


def test_a_failed_query_embedding_falls_back_to_words_for_that_turn() -> None:
    setup = Setup()
    setup.index()
    setup.embedder.failures = 1
    assert setup.recall.search(PARAPHRASE) == []  # no shared word: nothing, and no error
    assert setup.recall.search("trip to Lisbon")[0] == LISBON  # words still work
    assert setup.recall.search(PARAPHRASE)[0] == DENTIST  # the next turn has vectors again


def test_nothing_is_embedded_without_an_index_or_for_a_message_without_words() -> None:
    setup = Setup()
    assert setup.recall.search(PARAPHRASE) == []
    assert setup.recall.search("trip to Lisbon")[0] == LISBON  # BM25 over the history
    setup.index()
    calls = len(setup.embedder.calls)
    assert setup.recall.search("ok, thanks!") == []
    assert len(setup.embedder.calls) == calls


def test_a_failed_indexing_run_stores_nothing_and_says_so_quietly() -> None:
    setup = Setup()
    setup.embedder.failures = 1
    assert index_quietly(lambda: setup.indexer.index_scope(OWNER, setup.workspace)) is None
    assert setup.objects.objects == {}
    assert index_quietly(lambda: setup.indexer.index_scope(OWNER, setup.workspace)) is not None
    assert OWNER in setup.objects.objects


def test_embeddings_are_priced_and_stop_at_a_spending_limit() -> None:
    store = MemoryUsageStore()
    limits = SpendLimits(person_daily=Decimal("0.0002"))
    meter = UsageMeter(store, RecordingMetrics(), limits=limits, clock=lambda: datetime.now(UTC))
    embedder = StandInEmbedder(MODEL, cost_per_call=0.0001)
    setup = Setup()
    setup.index()
    with meter.job(Subject(7, None, 7, OWNER)) as job:
        metered = job.metered_embedder(embedder)
        assert metered is not None
        recall = InScope(setup.workspace, OWNER, setup.indexes, metered)
        assert recall.search(PARAPHRASE)[0] == DENTIST
        assert recall.search(PARAPHRASE)[0] == DENTIST  # the second call reaches the limit
        calls = len(embedder.calls)
        assert recall.search(PARAPHRASE) == []  # refused: words only, the turn goes on
        assert len(embedder.calls) == calls
    assert store.summary(7, datetime.now(UTC)).today.cost_usd == Decimal("0.0002")


# -- the stored index ----------------------------------------------------------------------


def test_a_warm_turn_with_an_unchanged_index_reads_no_bytes_again() -> None:
    setup = Setup()
    setup.index()
    fresh = InScope(setup.workspace, OWNER, ScopeIndexes(setup.objects, MODEL), setup.embedder)
    fresh.search(PARAPHRASE)
    gets, bodies = setup.objects.gets, setup.objects.bodies_sent
    fresh.search(PARAPHRASE)
    assert (setup.objects.gets - gets, setup.objects.bodies_sent - bodies) == (1, 0)


@pytest.mark.parametrize(
    "stored", [b"", b"NBRI\x00", b"garbage" * 20, "truncated", "older format", "other model"]
)
def test_an_unusable_index_is_words_only_then_rebuilt(stored: bytes | str) -> None:
    setup = Setup()
    setup.index()
    good = setup.objects.objects[OWNER]
    if stored == "truncated":
        stored = good[: len(good) // 2]
    elif stored == "older format":
        stored = good[:4] + b"\x00\x00" + good[6:]
    elif stored == "other model":
        other = ScopeIndexes(MemoryRecallIndexObjects(), "another-model")
        RecallIndexer(other, StandInEmbedder("another-model")).index_scope(OWNER, setup.workspace)
        stored = other._objects.objects[OWNER]  # type: ignore[attr-defined]
    assert isinstance(stored, bytes)
    setup.objects.objects[OWNER] = stored
    assert setup.recall.search(PARAPHRASE) == []  # no usable vectors: no error either
    assert setup.recall.search("trip to Lisbon")[0] == LISBON
    assert setup.indexer.index_scope(OWNER, setup.workspace).added == 3  # rebuilt over it
    assert decode(setup.objects.objects[OWNER], model=MODEL).model == MODEL
    assert setup.recall.search(PARAPHRASE)[0] == DENTIST


def test_two_writers_never_lose_each_others_chunks() -> None:
    objects = MemoryRecallIndexObjects()
    one, two = ScopeIndexes(objects, MODEL), ScopeIndexes(objects, MODEL)
    first = make_chunk("history", HISTORY_FILE, 1.0, "first writer's entry")
    second = make_chunk("document", "uploads/a.txt", 2.0, "second writer's document")
    one.update(OWNER, IndexUpdate(MODEL, 4, ((first, quantize([1, 0, 0, 0])),)))
    one.current(OWNER)
    # The second writer stores between the first one's read and its write.
    objects.before_put = lambda: two.update(
        OWNER, IndexUpdate(MODEL, 4, ((second, quantize([0, 1, 0, 0])),))
    )
    third = make_chunk("memory", MEMORY_FILE, 3.0, "first writer's second entry")
    one.update(OWNER, IndexUpdate(MODEL, 4, ((third, quantize([0, 0, 1, 0])),)))
    stored = decode(objects.objects[OWNER])
    assert {chunk.text for chunk in stored.chunks} == {first.text, second.text, third.text}


def test_a_writer_that_always_loses_gives_up_with_a_storage_error() -> None:
    objects = MemoryRecallIndexObjects()
    pauses: list[float] = []
    indexes = ScopeIndexes(objects, MODEL, pause=pauses.append)
    chunk = make_chunk("history", HISTORY_FILE, 1.0, "x")

    def interfere() -> None:
        objects.objects[OWNER] = objects.objects.get(OWNER, b"") + b"!"
        objects.before_put = interfere

    objects.before_put = interfere
    with pytest.raises(StorageError, match="every write lost"):
        indexes.update(OWNER, IndexUpdate(MODEL, 4, ((chunk, quantize([1, 0, 0, 0])),)))
    assert len(pauses) == WRITE_ATTEMPTS - 1  # a pause before each retry


def test_a_scope_index_holds_only_its_own_text() -> None:
    objects = MemoryRecallIndexObjects()
    indexes = ScopeIndexes(objects, MODEL)
    embedder = StandInEmbedder(MODEL)
    indexer = RecallIndexer(indexes, embedder)
    ana, bob = Scope("people/1"), Scope("people/2")
    ana_files = MemoryWorkspace({HISTORY_FILE: history(DENTIST)})
    bob_files = MemoryWorkspace({HISTORY_FILE: history(LISBON)})
    indexer.index_scope(ana, ana_files)
    indexer.index_scope(bob, bob_files)
    assert b"Moreau" in objects.objects[ana] and b"Lisbon" not in objects.objects[ana]
    assert b"Lisbon" in objects.objects[bob] and b"Moreau" not in objects.objects[bob]
    recall = InScope(bob_files, bob, indexes, embedder)
    assert recall.search(PARAPHRASE) == []  # Bob never sees Ana's appointment
    ana_recall = InScope(ana_files, ana, indexes, embedder)
    assert ana_recall.search(PARAPHRASE)[0] == DENTIST


def test_the_stand_in_embedding_relates_paraphrases_more_than_strangers() -> None:
    def cosine(a: str, b: str) -> float:
        return sum(x * y for x, y in zip(embed(a), embed(b), strict=True))

    assert cosine(PARAPHRASE, DENTIST) > 0.3 > cosine(PARAPHRASE, LISBON)


def test_prepare_builds_a_changed_index_off_the_reply_path() -> None:
    setup = Setup()
    setup.index()
    indexes = ScopeIndexes(setup.objects, MODEL)  # another container's
    recall = InScope(setup.workspace, OWNER, indexes, setup.embedder)
    recall.prepare()
    current = indexes.current(OWNER)
    assert current is not None and current._scorer  # the vectors are packed already
    gets, bodies = setup.objects.gets, setup.objects.bodies_sent
    assert recall.search(PARAPHRASE)[0] == DENTIST
    assert (setup.objects.gets - gets, setup.objects.bodies_sent - bodies) == (1, 0)
