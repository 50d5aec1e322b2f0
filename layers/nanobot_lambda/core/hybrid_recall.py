"""Hybrid recall (with `EMBEDDING_MODEL`): a paraphrase finds what BM25 alone cannot.

Three parts, each with one entry point:

- `ScopeIndexes` keeps each scope's index (core/recall_index.py) per container. `current`
  makes one conditional GET (If-None-Match on the ETag it holds): an unchanged index costs a
  304 and no bytes, a changed one is read and decoded once. `update` is a conditional write
  (If-Match on the ETag read, or If-None-Match for a first index); a writer that lost the race
  reads the winner's index, applies its own `IndexUpdate` to it again and retries, so two
  writers never lose each other's chunks. An object that is corrupt, truncated, of an older
  format or of another embedding model reads as no index (logged): recall is BM25 only until
  the next `RecallIndexer` run rebuilds it over it.
- `RecallIndexer` is called off the reply path (after the reply, at consolidation, on upload):
  `index_scope` brings MEMORY.md and the history files into the index (embedding only chunks
  it does not have yet, dropping MEMORY.md entries that are gone), `add_document` a document's
  text. It reads only the scope's own workspace and writes only the scope's own index, so no
  scope's index ever holds another's text.
- `HybridRecall.search` is what a turn calls, in place of `HistoryRecall.search`: the message
  is embedded once (nothing is embedded when the scope has no index or the message no word
  that means anything), ranked against the index by cosine similarity (at least
  `min_similarity`) and by BM25 over the index's chunks and the history entries, and the two
  fused by score (`_fuse`: the similarity, plus the square of the share of the message's words
  an entry holds, plus a little for a recent entry), the best kept within the same character
  budget as before.
  A failed or refused embedding (a provider error, a spending limit) leaves BM25 alone for that
  turn; it never fails the turn. `prepare` does the work a changed index costs (decoding,
  packing the vectors, the BM25 index) off the reply path, after indexing.

Embeddings cost money: the embedder the turn passes is metered (core/usage.py,
`MeteredEmbedder`), so they count against the chat's spending limits like any model call.
"""

from __future__ import annotations

import logging
import random
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from nanobot_lambda.core.chunks import document_chunks, history_chunks, memory_chunks
from nanobot_lambda.core.errors import ModelError, StorageError
from nanobot_lambda.core.memory import MEMORY_FILE, text_of
from nanobot_lambda.core.ports import Embedder, RecallIndexObjects, Workspace
from nanobot_lambda.core.recall import Bm25, HistoryRecall, fit_budget, tokenize
from nanobot_lambda.core.recall_index import (
    Chunk,
    IndexFormatError,
    IndexUpdate,
    RecallIndex,
    Similarities,
    decode,
    encode,
    quantize,
)
from nanobot_lambda.core.scopes import Scope
from nanobot_lambda.core.workspace import WriteConflict

logger = logging.getLogger(__name__)

WRITE_ATTEMPTS = 8
RETRY_PAUSE_SECONDS = 0.05  # before the n-th retry: up to this × 2^n, at random
EMBED_BATCH = 64  # texts per embedding request
MAX_EMBEDDED_PER_RUN = 2_000  # an indexing run embeds at most this many chunks; the next goes on
CANDIDATES = 50  # from each ranking
# Fusion by score, not by rank: an entry's cosine similarity with the message, plus WORDS_WEIGHT
# × the square of the share of the message's words it holds (Bm25.shares), plus the recency
# bonus. Squared, a word shared by chance (one of four: 1/16 of the weight) does not outweigh
# meaning, while an entry holding all of a literal question's words gains about what separates
# a close entry's similarity from a stranger's. (Rank fusion, RRF, put any entry both rankings
# held above the one closest in meaning: on bench/recall.py it ranked paraphrases worse than
# vectors alone.)
WORDS_WEIGHT = 0.3
RECENCY_WEIGHT = 0.02  # a brand-new entry gains this much similarity: enough to break a tie…
RECENCY_HALF_LIFE_DAYS = 90.0  # …and half as much at this age
DEFAULT_MIN_SIMILARITY = 0.3
PROMPT_MEMORY_CHARS = 20_000  # how much of MEMORY.md the system prompt shows (core/context.py)


@dataclass(frozen=True)
class RecallLimits:
    """How much a turn recalls: at most `entries` entries within `max_chars` characters (the
    runtime block's budget, RECALL_MAX_CHARS), each by meaning at least `min_similarity`."""

    entries: int = 3
    max_chars: int = 1200
    min_similarity: float = DEFAULT_MIN_SIMILARITY


@dataclass
class _Held:
    etag: str
    index: RecallIndex | None  # None: the object is not a usable index (to be rebuilt)


class ScopeIndexes:
    """Each scope's recall index, as this container last read it."""

    def __init__(
        self,
        objects: RecallIndexObjects,
        model: str,
        *,
        pause: Callable[[float], None] = time.sleep,
    ) -> None:
        self._objects = objects
        self.model = model
        self._pause = pause
        self._held: dict[Scope, _Held] = {}

    def current(self, scope: Scope) -> RecallIndex | None:
        """The scope's index (None: none yet, or unusable), revalidated with one conditional
        read."""
        held = self._held.get(scope)
        stored = self._objects.get(scope, unless_etag=held.etag if held else None)
        if stored is None:
            self._held.pop(scope, None)
            return None
        if stored.data is None and held is not None:
            return held.index
        index: RecallIndex | None = None
        try:
            index = decode(stored.data or b"", model=self.model)
        except IndexFormatError as error:
            logger.warning(
                "recall index unusable, to be rebuilt: %s", error, extra={"scope": scope.name}
            )
        self._held[scope] = _Held(stored.etag, index)
        return index

    def update(self, scope: Scope, update: IndexUpdate) -> RecallIndex:
        """Apply `update` to the stored index with a conditional write, again on the newer
        index after a lost race. Raises StorageError when every attempt lost (or failed)."""
        for attempt in range(WRITE_ATTEMPTS):
            if attempt:  # spread the writers that lost out, so that one of them wins next
                self._pause(random.uniform(0, RETRY_PAUSE_SECONDS * 2**attempt))  # noqa: S311
            index = self.current(scope)
            held = self._held.get(scope)
            base = index if index is not None else RecallIndex.empty(update.model, update.dims)
            new = base.applied(update)
            try:
                etag = self._objects.put(scope, encode(new), if_match=held.etag if held else None)
            except WriteConflict:
                continue  # another writer stored first: apply ours to theirs
            self._held[scope] = _Held(etag, new)
            return new
        raise StorageError(f"recall index of scope {scope.name!r}: every write lost a race")


@dataclass(frozen=True)
class Indexed:
    added: int
    removed: int
    remaining: int  # chunks left for the next run (MAX_EMBEDDED_PER_RUN)


class RecallIndexer:
    """Brings a scope's memory, history and documents into its index (off the reply path)."""

    def __init__(
        self,
        indexes: ScopeIndexes,
        embedder: Embedder,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._indexes = indexes
        self._embedder = embedder
        self._clock = clock

    def index_scope(self, scope: Scope, workspace: Workspace) -> Indexed:
        """Index what is new in the scope's MEMORY.md and history; drop MEMORY.md entries no
        longer there. `workspace` is the scope's own. Raises ModelError (embedding failed or
        refused) or StorageError; what was embedded before a failure is not stored."""
        now = self._clock()
        memory = text_of(workspace, MEMORY_FILE)
        wanted = memory_chunks(memory, MEMORY_FILE, now)
        _, entries = HistoryRecall().entries(workspace)
        wanted += history_chunks(entries, now)
        current = self._indexes.current(scope)
        have = current.ids if current is not None else frozenset()
        gone: frozenset[str] = frozenset()
        if current is not None:
            wanted_ids = {chunk.id for chunk in wanted}
            gone = frozenset(
                chunk.id
                for chunk in current.chunks
                if chunk.source == "memory" and chunk.id not in wanted_ids
            )
        return self._store(scope, wanted, have, gone)

    def add_document(self, scope: Scope, origin: str, text: str) -> Indexed:
        """Index a document's text (`origin`: its path in the scope's workspace)."""
        current = self._indexes.current(scope)
        have = current.ids if current is not None else frozenset()
        return self._store(scope, document_chunks(text, origin, self._clock()), have, frozenset())

    def _store(
        self, scope: Scope, wanted: list[Chunk], have: frozenset[str], gone: frozenset[str]
    ) -> Indexed:
        unique: dict[str, Chunk] = {}
        for chunk in wanted:
            if chunk.id not in have:
                unique.setdefault(chunk.id, chunk)
        new = list(unique.values())
        todo, later = new[:MAX_EMBEDDED_PER_RUN], len(new) - min(len(new), MAX_EMBEDDED_PER_RUN)
        if not todo and not gone:
            return Indexed(0, 0, 0)
        added = []
        model, dims = self._indexes.model, 0
        for first in range(0, len(todo), EMBED_BATCH):
            batch = todo[first : first + EMBED_BATCH]
            embeddings = self._embedder.embed([chunk.text for chunk in batch])
            if len(embeddings.vectors) != len(batch):
                raise ModelError("the embedding model returned a different number of vectors")
            for chunk, vector in zip(batch, embeddings.vectors, strict=True):
                dims = dims or len(vector)
                if len(vector) != dims:
                    raise ModelError("the embedding model returned vectors of different sizes")
                added.append((chunk, quantize(vector)))
        if not dims:  # only removals: keep the stored index's size
            current = self._indexes.current(scope)
            if current is None:
                return Indexed(0, 0, later)
            dims = current.dims
        self._indexes.update(scope, IndexUpdate(model, dims, tuple(added), gone))
        logger.info(
            "recall index updated",
            extra={"scope": scope.name, "added": len(added), "removed": len(gone), "later": later},
        )
        return Indexed(len(added), len(gone), later)


def index_quietly(run: Callable[[], Indexed]) -> Indexed | None:
    """Run an indexing step off the reply path: a failure is logged, never raised (the next
    run picks up what this one did not store)."""
    try:
        return run()
    except (ModelError, StorageError) as error:
        logger.warning("recall indexing failed: %s", error)
        return None


class HybridRecall:
    """A turn's recall with embeddings: vector and BM25 rankings fused (see above), in the
    scope each call names (its workspace, and the embedder the job's usage is metered by)."""

    def __init__(
        self,
        indexes: ScopeIndexes,
        limits: RecallLimits | None = None,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._indexes = indexes
        self._history = HistoryRecall()
        self._limits = limits or RecallLimits()
        self._clock = clock
        self._terms: dict[str, Counter[str]] = {}  # each candidate text's terms, for BM25
        # BM25 over the last (index, history files' ETags) seen, rebuilt when either changes.
        self._bm25: tuple[RecallIndex | None, tuple[str, ...], Bm25, list[Chunk]] | None = None

    def search(
        self,
        query: str,
        shown: str = "",
        *,
        workspace: Workspace,
        scope: Scope,
        embedder: Embedder,
    ) -> list[str]:
        """Like `HistoryRecall.search`: the best entries, within the budget, none of them
        already in `shown`."""
        if self._limits.max_chars <= 0 or not tokenize(query):
            return []
        chosen = self.ranked(query, workspace=workspace, scope=scope, embedder=embedder)
        # MEMORY.md's entries the system prompt shows already are not repeated.
        memory = _flat(text_of(workspace, MEMORY_FILE)[:PROMPT_MEMORY_CHARS])
        texts = (
            _shown(chunk)
            for chunk in chosen
            if chunk.text not in shown
            and not (chunk.source == "memory" and _flat(chunk.text) in memory)
        )
        return fit_budget(texts, self._limits.entries, self._limits.max_chars)

    def prepare(self, workspace: Workspace, scope: Scope) -> None:
        """Read the scope's index and build what a turn scores with, so that the next turn
        finds it ready (after indexing, off the reply path). Never raises for storage."""
        try:
            index = self._indexes.current(scope)
        except StorageError as error:
            logger.warning("recall index not read: %s", error)
            return
        if index is not None:
            index.scorer()
        self._lexical(workspace, index)

    def ranked(
        self, query: str, *, workspace: Workspace, scope: Scope, embedder: Embedder
    ) -> list[Chunk]:
        """The candidates either ranking found for `query`, best first after fusion."""
        try:
            index = self._indexes.current(scope)
        except StorageError as error:
            logger.warning("recall index not read: %s", error)
            index = None
        candidates, bm25 = self._lexical(workspace, index)
        shares = {position: share for share, position in bm25.shares(query)[:CANDIDATES]}
        similarities = None
        if index is not None and index.chunks:
            similarities = self._similarities(embedder, index, query)
        return [candidates[position] for position in self._fuse(shares, similarities, candidates)]

    @staticmethod
    def _similarities(embedder: Embedder, index: RecallIndex, query: str) -> Similarities | None:
        """The query's similarity with each of the index's chunks (the first of the
        candidates); None when the embedding failed."""
        try:
            embeddings = embedder.embed([query])
        except ModelError as error:
            logger.warning("query not embedded, recall by words only: %s", error)
            return None
        if len(embeddings.vectors) != 1:
            return None
        return index.scorer().similarities(embeddings.vectors[0])

    def _lexical(self, workspace: Workspace, index: RecallIndex | None) -> tuple[list[Chunk], Bm25]:
        """The candidates: the index's chunks (in its order), then the history entries it does
        not hold yet; and their BM25 index."""
        etags, entries = self._history.entries(workspace)
        held = self._bm25
        if held is None or held[0] is not index or held[1] != etags:
            chunks = list(index.chunks) if index is not None else []
            texts = {chunk.text for chunk in chunks}
            chunks += [chunk for chunk in history_chunks(entries, 0.0) if chunk.text not in texts]
            # Terms are kept per text across rebuilds: an index that grew by a few chunks
            # costs their tokenising only.
            known, self._terms = self._terms, {}

            def terms_of(text: str) -> Counter[str]:
                terms = known.get(text)
                if terms is None:
                    terms = Counter(tokenize(text))
                self._terms[text] = terms
                return terms

            held = (index, etags, Bm25([chunk.text for chunk in chunks], terms_of), chunks)
            self._bm25 = held
        return held[3], held[2]

    def _fuse(
        self,
        shares: dict[int, float],
        similarities: Similarities | None,
        candidates: list[Chunk],
    ) -> list[int]:
        """Positions of the entries found by meaning (the best `CANDIDATES` at least
        `min_similarity`) or by words (`shares`: position -> share of the query it holds), best
        first by fused score (see `WORDS_WEIGHT`)."""
        floor = self._limits.min_similarity
        found = set(shares)
        if similarities is not None:
            found.update(position for _, position in similarities.best(CANDIDATES, floor))

        def meaning(position: int) -> float:
            # An entry found by words alone keeps its own similarity, low as it may be; one
            # not embedded yet (or every entry, when the embedding failed) counts as just
            # similar enough, so that words alone order it.
            if similarities is not None and position < similarities.rows:
                return similarities.of(position)
            return max(floor, 0.0)

        now = self._clock()
        fused: dict[int, float] = {}
        for position in found:
            age_days = max(0.0, now - candidates[position].at) / 86_400
            fused[position] = (
                meaning(position)
                + WORDS_WEIGHT * min(1.0, shares.get(position, 0.0)) ** 2
                + RECENCY_WEIGHT * 0.5 ** (age_days / RECENCY_HALF_LIFE_DAYS)
            )
        return sorted(fused, key=lambda position: (-fused[position], -position))


def _shown(chunk: Chunk) -> str:
    """How a recalled chunk reads in the runtime block: a document's names its file."""
    if chunk.source == "document":
        return f"({chunk.origin.rsplit('/', 1)[-1]}) {chunk.text}"
    return chunk.text


def _flat(text: str) -> str:
    return " ".join(text.split())
