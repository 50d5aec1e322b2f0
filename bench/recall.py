"""Recall quality and cost (issues 28, 37): BM25 alone against hybrid recall; a warm turn's cost.

1. Quality, on bench/data/recall_set.json: 205 memory and history entries of one made-up
   person, 110 questions that paraphrase an entry without any of its key words, and 30 that
   repeat them, each with the entry that answers it. For each question the entries are ranked by
   BM25 alone, by vectors alone and by hybrid recall (core/hybrid_recall.py: both fused by
   score, the similarity plus the squared share of the question's words an entry holds, recent
   entries mildly preferred); hit@5 is the share of questions whose answer is among the first
   five, MRR the mean of 1/rank of the answer (0 when absent). Vectors alone and hybrid are
   measured twice: with the least similarity a turn recalls by meaning (RECALL_MIN_SIMILARITY's
   default, as a turn runs; vectors alone then is the very ranking hybrid fuses) and with none.
   Then all questions by half: the fusion's weights were chosen on the even-numbered questions,
   the odd-numbered ones were held out.
   The embeddings come from the stand-in embedding server (tests/support/embedding_server.py,
   over HTTP through litellm) unless EMBEDDING_MODEL is set, then from that model (with
   EMBEDDING_DIMENSIONS, EMBEDDING_API_BASE and the provider's usual key variable).
2. Cost: the time `HybridRecall.search` adds to a warm turn (index read and packed, BM25 built;
   the query's embedding excluded, as is the index's conditional GET: a 304 of no body), at 1,000
   and 10,000 chunks of 256 dimensions, median and p95; the first turn after the index changed
   (decode, pack, BM25); and the index's stored size.

    make bench            or            .venv/bin/python bench/recall.py
"""

from __future__ import annotations

import json
import os
import random
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # tests.support: the stand-in embedding server, in-memory ports

from nanobot_lambda.core.hybrid_recall import (  # noqa: E402
    CANDIDATES,
    HybridRecall,
    RecallIndexer,
    RecallLimits,
    ScopeIndexes,
)
from nanobot_lambda.core.memory import HISTORY_FILE, MEMORY_FILE  # noqa: E402
from nanobot_lambda.core.model import Embeddings  # noqa: E402
from nanobot_lambda.core.ports import Embedder  # noqa: E402
from nanobot_lambda.core.recall import Bm25  # noqa: E402
from nanobot_lambda.core.recall_index import (  # noqa: E402
    IndexUpdate,
    RecallIndex,
    decode,
    encode,
    make_chunk,
    quantize,
)
from nanobot_lambda.core.scopes import OWNER  # noqa: E402
from tests.support.embedding_server import EmbeddingServer  # noqa: E402
from tests.support.fakes import MemoryRecallIndexObjects, MemoryWorkspace  # noqa: E402

DATA = ROOT / "bench" / "data" / "recall_set.json"
NOW = 1_781_049_600.0  # 2026-06-10 00:00 UTC, after the set's newest entry
SIZES = (1_000, 10_000)
DIMS = 256
REPEATS = 40


def embedder() -> tuple[Embedder, str, Callable[[], None]]:
    """(the embedder, what it is, how to stop it)."""
    from nanobot_lambda.adapters.llm.embeddings import LitellmEmbedder
    from nanobot_lambda.settings import AgentSettings
    from tests.support.settings import AGENT_ENV

    if os.environ.get("EMBEDDING_MODEL"):
        names = ("EMBEDDING_", "LLM_")
        chosen = {key: value for key, value in os.environ.items() if key.startswith(names)}
        settings = AgentSettings.from_env({**AGENT_ENV, **chosen})
        model = settings.embedding_model or ""
        return LitellmEmbedder(model, settings), f"{model} (EMBEDDING_MODEL)", lambda: None
    server = EmbeddingServer().start()
    environ = {**AGENT_ENV, **server.env(), "LLM_API_KEY": "sk-stand-in"}
    settings = AgentSettings.from_env(environ)
    about = (
        "the stand-in (tests/support/embedding_server.py): hashed words, character trigrams and "
        "~120 hand-written groups of related words, NOT a language model; its groups were "
        "written by the author of the recall set, so read its figures as the machinery "
        "working, not as what a real model scores (set EMBEDDING_MODEL for that). The fusion's "
        "weights were chosen with it as it is (not changed for them), on the even half of the "
        "questions; a real model's similarities lie on another scale: check the weights with one "
        "before relying on them"
    )
    return LitellmEmbedder(EmbeddingServer.MODEL, settings), about, server.stop


Chooser = Callable[[int, dict[str, str]], bool]  # (the question's number, the question) -> in?


def of_kind(kind: str) -> Chooser:
    return lambda number, question: kind in ("all", question["kind"])


def quality() -> None:
    data = json.loads(DATA.read_text(encoding="utf-8"))
    entries, questions = data["entries"], data["questions"]
    memory = "".join(f"- {e['text']}\n" for e in entries if e["kind"] == "memory")
    history = "# History\n\n" + "".join(
        f"{e['text']}\n\n" for e in entries if e["kind"] == "history"
    )
    workspace = MemoryWorkspace({MEMORY_FILE: memory, HISTORY_FILE: history})
    made, about, stop = embedder()
    try:
        indexes = ScopeIndexes(MemoryRecallIndexObjects(), getattr(made, "_model", "model"))
        started = time.perf_counter()
        indexed = RecallIndexer(indexes, made, clock=lambda: NOW).index_scope(OWNER, workspace)
        indexing = time.perf_counter() - started
        floor = RecallLimits().min_similarity
        recalls = {
            limit: HybridRecall(indexes, RecallLimits(min_similarity=limit), clock=lambda: NOW)
            for limit in (floor, -1.0)
        }
        index = indexes.current(OWNER)
        assert index is not None
        answer_of = {e["text"]: e["id"] for e in entries}
        bm25 = Bm25([chunk.text for chunk in index.chunks])
        # Each ranking: (its group: the least similarity, None for BM25; its name) -> per
        # question, the answers' ids best first.
        rankings: dict[tuple[float | None, str], list[list[str]]] = {(None, "BM25 alone"): []}
        for limit in recalls:
            rankings[limit, "vectors alone"] = []
            rankings[limit, "hybrid"] = []
        for question in questions:
            text = question["question"]
            rankings[None, "BM25 alone"].append(
                [answer_of[index.chunks[p].text] for _, p in bm25.ranked(text)]
            )
            vector = made.embed([text]).vectors[0]
            for limit, recall in recalls.items():
                scored = index.scorer().best(vector, CANDIDATES, limit)
                rankings[limit, "vectors alone"].append(
                    [answer_of[index.chunks[p].text] for _, p in scored]
                )
                rankings[limit, "hybrid"].append(
                    [
                        answer_of[chunk.text]
                        for chunk in recall.ranked(
                            text, workspace=workspace, scope=OWNER, embedder=made
                        )
                    ]
                )
    finally:
        stop()
    print(f"recall set: {len(entries)} entries, {len(questions)} questions ({DATA.name})")
    print(f"embeddings: {about}")
    print(f"indexing the set: {indexed.added} chunks in {indexing:.1f} s (embedding included)")
    groups = {
        floor: f"similarity at least {floor} (RECALL_MIN_SIMILARITY's default, as a turn recalls):",
        -1.0: "no least similarity:",
    }
    kinds: dict[str, Chooser] = {
        f"{kind} ({sum(kind in ('all', q['kind']) for q in questions)})": of_kind(kind)
        for kind in ("paraphrase", "literal", "all")
    }
    table(questions, rankings, kinds, groups)
    print("all questions by half:")
    halves: dict[str, Chooser] = {
        "even (weights chosen on)": lambda number, question: number % 2 == 0,
        "odd (held out)": lambda number, question: number % 2 == 1,
    }
    table(
        questions,
        {key: ranked for key, ranked in rankings.items() if key[0] != -1.0},
        halves,
        groups,
    )


def table(
    questions: Sequence[dict[str, str]],
    rankings: dict[tuple[float | None, str], list[list[str]]],
    columns: dict[str, Chooser],
    groups: dict[float, str],
) -> None:
    """hit@5 and MRR of each ranking (a row) over the questions each column chooses."""
    width = max(len(column) for column in columns) + 8
    print(f"{'':<18}" + "".join(f"{f'{column} hit@5':>{width}}{'MRR':>7}" for column in columns))
    shown: set[float] = set()
    for (group, name), ranked in rankings.items():
        if group is not None and group not in shown:
            print(groups[group])
            shown.add(group)
        cells = []
        for chooses in columns.values():
            chosen = [
                (question["answer"], ranking)
                for number, (question, ranking) in enumerate(zip(questions, ranked, strict=True))
                if chooses(number, question)
            ]
            cells.append(f"{hit_at(chosen, 5):>{width}.3f}{mrr(chosen):>7.3f}")
        print(f"{name if group is None else '  ' + name:<18}{''.join(cells)}")


def hit_at(chosen: Sequence[tuple[str, list[str]]], k: int) -> float:
    return sum(answer in ranking[:k] for answer, ranking in chosen) / len(chosen)


def mrr(chosen: Sequence[tuple[str, list[str]]]) -> float:
    return sum(
        1 / (ranking.index(answer) + 1) if answer in ranking else 0.0 for answer, ranking in chosen
    ) / len(chosen)


class Instant:
    """An embedder answering at once with fixed vectors: the turn's time without the call."""

    def __init__(self, vector: tuple[float, ...]) -> None:
        self._vector = vector

    def embed(self, texts: Sequence[str]) -> Embeddings:
        return Embeddings(tuple(self._vector for _ in texts), "synthetic")


def cost() -> None:
    generator = random.Random(28)
    words = [f"w{n}" for n in range(5_000)]
    print(f"warm turn, added by hybrid recall ({DIMS} dimensions, embedding call excluded):")
    for size in SIZES:
        added = []
        for row in range(size):
            text = " ".join(generator.choice(words) for _ in range(40))
            vector = [generator.gauss(0, 1) for _ in range(DIMS)]
            chunk = make_chunk("history", HISTORY_FILE, NOW - row * 3600, text)
            added.append((chunk, quantize(vector)))
        update = IndexUpdate("synthetic", DIMS, tuple(added))
        data = encode(RecallIndex.empty("synthetic", DIMS).applied(update))
        objects = MemoryRecallIndexObjects()
        objects.objects[OWNER] = data
        workspace = MemoryWorkspace()
        query = tuple(generator.gauss(0, 1) for _ in range(DIMS))
        indexes = ScopeIndexes(objects, "synthetic")
        recall = HybridRecall(indexes, RecallLimits(min_similarity=0.1))
        started = time.perf_counter()
        recall.prepare(workspace, OWNER)  # what a changed index costs, once: decode, pack, BM25
        first = time.perf_counter() - started
        timings, vector_only = [], []
        index = indexes.current(OWNER)
        assert index is not None
        for _ in range(REPEATS):
            asked = " ".join(generator.choice(words) for _ in range(8))
            started = time.perf_counter()
            recall.search(asked, workspace=workspace, scope=OWNER, embedder=Instant(query))
            timings.append(time.perf_counter() - started)
            started = time.perf_counter()
            index.scorer().best(query, 50, 0.1)
            vector_only.append(time.perf_counter() - started)
        started = time.perf_counter()
        decode(data)
        decoding = time.perf_counter() - started
        print(
            f"  {size:>6} chunks: {ms(statistics.median(timings))} median, {ms(p95(timings))} "
            f"p95, {ms(min(timings))} least (of it vector scoring: "
            f"{ms(statistics.median(vector_only))} median, {ms(min(vector_only))} least)"
        )
        print(
            f"  {'':>6}         a changed index, once (`prepare`, off the reply path where it "
            f"was indexed): {ms(first)} (decoding {ms(decoding)}); stored size "
            f"{len(data) / 1e6:.2f} MB ({size * DIMS / 1e6:.2f} MB of it int8 vectors)"
        )
    load = os.getloadavg()[0]
    print(
        f"  (pure Python, no numpy in the layer: core/recall_index.py packs the matrix into big "
        f"integers. Goal: 10 ms at 10,000 chunks. Load average now {load:.1f} on "
        f"{os.cpu_count()} cores: medians on a shared machine run high, the least is closer "
        "to an idle one.)"
    )


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


def p95(values: list[float]) -> float:
    return sorted(values)[max(0, round(0.95 * len(values)) - 1)]


if __name__ == "__main__":
    quality()
    cost()
