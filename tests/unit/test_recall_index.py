"""The recall index's format, scoring and updates, and the chunking of what it holds."""

from __future__ import annotations

import itertools
import math
import random
import struct

import pytest

from nanobot_lambda.core import recall_index
from nanobot_lambda.core.chunks import (
    DOCUMENT_CHUNK_CHARS,
    document_chunks,
    entry_time,
    history_chunks,
    memory_chunks,
    windows,
)
from nanobot_lambda.core.memory import HistoryEntry
from nanobot_lambda.core.recall_index import (
    FORMAT_VERSION,
    IndexFormatError,
    IndexUpdate,
    RecallIndex,
    decode,
    dot_scores,
    encode,
    make_chunk,
    quantize,
    top,
)


def unit(vector: list[float]) -> list[float]:
    norm = math.sqrt(sum(value * value for value in vector))
    return [value / norm for value in vector]


def random_index(rows: int, dims: int = 64, seed: int = 7) -> tuple[RecallIndex, list[list[float]]]:
    generator = random.Random(seed)
    vectors = [unit([generator.gauss(0, 1) for _ in range(dims)]) for _ in range(rows)]
    added = tuple(
        (make_chunk("history", "memory/HISTORY.md", float(row), f"entry {row}"), quantize(vector))
        for row, vector in enumerate(vectors)
    )
    return RecallIndex.empty("m", dims).applied(IndexUpdate("m", dims, added)), vectors


# -- scoring -------------------------------------------------------------------------------


@pytest.mark.parametrize("dims", [16, 256, 300])  # 300: fields four bytes wide
def test_packed_scores_equal_the_row_by_row_dot_products(dims: int) -> None:
    index, _ = random_index(1_100, dims)  # more rows than one block
    query = unit([random.Random(1).gauss(0, 1) for _ in range(dims)])
    assert index.scorer().scores(query) == pytest.approx(dot_scores(index, query), abs=1e-9)


def test_scores_are_the_cosine_similarity_within_int8_rounding() -> None:
    index, vectors = random_index(50, 256)
    query = vectors[3]
    exact = [sum(a * b for a, b in zip(query, vector, strict=True)) for vector in vectors]
    scores = index.scorer().scores(query)
    assert scores == pytest.approx(exact, abs=0.02)
    assert top(scores, 1, 0.5) == [(pytest.approx(1.0, abs=0.02), 3)]


@pytest.mark.parametrize("floor", [-1.0, 0.0, 0.1, 0.9])
def test_the_best_rows_are_the_top_of_the_scores(floor: float) -> None:
    index, _ = random_index(700, 32)
    query = unit([random.Random(3).gauss(0, 1) for _ in range(32)])
    scorer = index.scorer()
    expected = top(scorer.scores(query), 20, floor)
    assert scorer.best(query, 20, floor) == [(pytest.approx(s), row) for s, row in expected]


def test_a_query_of_another_size_scores_nothing() -> None:
    index, _ = random_index(3, 16)
    assert index.scorer().scores([1.0] * 15) == []
    assert index.scorer().best([1.0] * 15, 5, 0.0) == []
    assert RecallIndex.empty("m", 16).scorer().scores([1.0] * 16) == []


def test_top_keeps_the_best_above_the_floor() -> None:
    assert top([0.1, 0.9, 0.5, 0.2], 2, 0.15) == [(0.9, 1), (0.5, 2)]
    assert top([0.1, 0.2], 5, 0.3) == []


# -- the stored format ---------------------------------------------------------------------


def test_an_index_reads_back_as_it_was_written() -> None:
    index, _ = random_index(20)
    assert decode(encode(index)) == index
    assert decode(encode(RecallIndex.empty("m", 8))) == RecallIndex.empty("m", 8)


def test_a_truncated_object_is_refused_at_any_length() -> None:
    data = encode(random_index(5)[0])
    for length in (0, 3, 10, len(data) // 2, len(data) - 1):
        with pytest.raises(IndexFormatError):
            decode(data[:length])


def test_a_corrupt_object_is_refused() -> None:
    data = bytearray(encode(random_index(5)[0]))
    data[len(data) // 2] ^= 0xFF
    with pytest.raises(IndexFormatError, match="checksum"):
        decode(bytes(data))
    with pytest.raises(IndexFormatError, match="not a recall index"):
        decode(b"JUNK" + bytes(data[4:]))


def test_an_object_of_an_older_format_or_another_model_is_refused() -> None:
    data = encode(random_index(5)[0])
    older = data[:4] + struct.pack("<H", FORMAT_VERSION - 1) + data[6:]
    with pytest.raises(IndexFormatError, match="format version"):
        decode(older)
    with pytest.raises(IndexFormatError, match="made with m"):
        decode(data, model="another-model")


# -- updates -------------------------------------------------------------------------------


def test_an_update_removes_then_adds_without_duplicates() -> None:
    index, _ = random_index(3, 8)
    first, second, third = index.chunks
    fresh = make_chunk("memory", "memory/MEMORY.md", 9.0, "new fact")
    update = IndexUpdate(
        "m", 8, ((fresh, quantize([1.0] * 8)), (third, quantize([1.0] * 8))), frozenset({first.id})
    )
    updated = index.applied(update)
    assert [chunk.text for chunk in updated.chunks] == [second.text, third.text, fresh.text]
    assert updated.matrix[:16] == index.matrix[8:24]  # the kept rows are kept as they were
    assert len(updated.matrix) == 3 * 8 and len(updated.scales) == 3


def test_an_update_of_another_model_starts_again_from_empty() -> None:
    index, _ = random_index(3, 8)
    fresh = make_chunk("memory", "memory/MEMORY.md", 9.0, "new fact")
    updated = index.applied(IndexUpdate("other", 4, ((fresh, quantize([1.0] * 4)),)))
    assert (updated.model, updated.dims, updated.chunks) == ("other", 4, (fresh,))


def test_past_the_chunk_limit_the_oldest_go(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(recall_index, "MAX_CHUNKS", 2)
    index, _ = random_index(3, 8)  # written at 0, 1, 2
    assert [chunk.at for chunk in index.chunks] == [1.0, 2.0]


# -- chunking ------------------------------------------------------------------------------

MEMORY = """# About Ana

- Allergic to peanuts;
  carries an EpiPen.
- Works at the hospital on night shifts.

## Home

The flat is on the fourth floor, no lift.
"""


def test_memory_entries_are_its_items_and_paragraphs_not_its_headings() -> None:
    chunks = memory_chunks(MEMORY, "memory/MEMORY.md", 5.0)
    assert [chunk.text for chunk in chunks] == [
        "Allergic to peanuts; carries an EpiPen.",
        "Works at the hospital on night shifts.",
        "The flat is on the fourth floor, no lift.",
    ]
    assert {(chunk.source, chunk.origin, chunk.at) for chunk in chunks} == {
        ("memory", "memory/MEMORY.md", 5.0)
    }


def test_history_entries_are_dated_by_their_timestamp() -> None:
    entries = [
        HistoryEntry("memory/HISTORY.md", "[2026-03-05 18:40] Booked the dentist."),
        HistoryEntry("memory/HISTORY.md", "No timestamp here."),
    ]
    first, second = history_chunks(entries, 42.0)
    assert first.at == entry_time("[2026-03-05 18:40]") == 1772736000.0
    assert second.at == 42.0
    assert first.id != make_chunk("memory", "x", 0, first.text).id  # the source is in the id


def test_the_same_entry_has_the_same_id_wherever_it_lives() -> None:
    archived = history_chunks([HistoryEntry("memory/history/2026.md", "[2026-01-01 10:00] A")], 0)
    current = history_chunks([HistoryEntry("memory/HISTORY.md", "[2026-01-01 10:00] A")], 0)
    assert archived[0].id == current[0].id  # a rollover does not make it new


def test_document_windows_overlap_and_cover_the_whole_text() -> None:
    sentences = [f"Sentence number {n} says something about clause {n}." for n in range(120)]
    text = " ".join(sentences)
    pieces = [chunk.text for chunk in document_chunks(text, "uploads/1/a.pdf.txt", 0.0)]
    assert len(pieces) > 5
    assert all(len(piece) <= DOCUMENT_CHUNK_CHARS for piece in pieces)
    for sentence in sentences:  # each sentence is whole in some piece
        assert any(sentence in piece for piece in pieces)
    for before, after in itertools.pairwise(pieces):
        assert after[:20] in before  # each starts inside the previous one


def test_windows_of_short_or_blank_text() -> None:
    assert windows("  short  ", 100, 10) == ["short"]
    assert windows("   ", 100, 10) == []
    assert all(len(piece) <= 10 for piece in windows("x" * 35, 10, 3))
