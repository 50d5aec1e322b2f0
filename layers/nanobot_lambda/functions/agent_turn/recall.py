"""Recall as a turn uses it: one object per container, BM25 alone or hybrid (docs/memory.md).

agent_turn builds one `TurnRecall` beside its other parts and uses it at three points:

- `search(message, shown)` when it renders a run's runtime block (in place of
  `HistoryRecall.search`, same arguments, same result);
- `document_stored(path, text)`, given to the media resolver (`on_document`): a document's text
  was stored beside its upload; it is only noted, with its scope;
- `after_reply()` at the end of a job, inside its `UsageMeter.job` (so that the embeddings are
  the job's chat's), after the reply is sent and saved and any consolidation has run: the
  documents the job noted are indexed, then the scope's MEMORY.md and history if their
  ETags changed since this container indexed them (so a turn that changed nothing embeds
  nothing and reads nothing but the cached listing), and the index is made ready for the next
  turn (`HybridRecall.prepare`).

Without `EMBEDDING_MODEL` (no embedder) it is the BM25 recall it always was, and the other two
do nothing: no index, no request, no cost. With one, every embedding goes through the meter
(counted for the job's chat, refused past a spending limit), and the index is the scope's the
workspace switch points at (core/scopes.py: `ScopeSwitch`), so each chat reads and writes its
own scope's index only. Indexing failures are logged, never raised.
"""

from __future__ import annotations

import logging
from functools import partial

from nanobot_lambda.core.hybrid_recall import (
    HybridRecall,
    RecallIndexer,
    RecallLimits,
    ScopeIndexes,
    index_quietly,
)
from nanobot_lambda.core.memory import MEMORY_FILE, history_files
from nanobot_lambda.core.ports import Embedder, RecallIndexObjects
from nanobot_lambda.core.recall import HistoryRecall
from nanobot_lambda.core.scopes import Scope, ScopeSwitch
from nanobot_lambda.core.usage import UsageMeter
from nanobot_lambda.settings import AgentSettings

logger = logging.getLogger(__name__)


class TurnRecall:
    def __init__(
        self,
        workspace: ScopeSwitch,
        settings: AgentSettings,
        meter: UsageMeter,
        embedder: Embedder | None = None,
        indexes: RecallIndexObjects | None = None,
    ) -> None:
        self._workspace = workspace
        self._words = HistoryRecall(workspace, max_chars=settings.recall_max_chars)
        metered = meter.metered_embedder(embedder)
        self._hybrid: HybridRecall | None = None
        self._indexer: RecallIndexer | None = None
        if metered is not None and indexes is not None and settings.embedding_model:
            scope_indexes = ScopeIndexes(indexes, settings.embedding_model)
            limits = RecallLimits(
                max_chars=settings.recall_max_chars,
                min_similarity=settings.recall_min_similarity,
            )
            self._hybrid = HybridRecall(
                workspace, lambda: workspace.scope, scope_indexes, metered, limits
            )
            self._indexer = RecallIndexer(scope_indexes, metered)
        self._pending: list[tuple[Scope, str, str]] = []  # documents to index after the reply
        self._indexed: dict[Scope, tuple[str, ...]] = {}  # each scope's files when indexed

    @property
    def hybrid(self) -> bool:
        return self._hybrid is not None

    def search(self, query: str, shown: str = "") -> list[str]:
        """The entries to recall for the user's message (see `HistoryRecall.search`)."""
        if self._hybrid is None:
            return self._words.search(query, shown)
        return self._hybrid.search(query, shown)

    def document_stored(self, path: str, text: str) -> None:
        """A document's text was stored at `path` in the current scope: index it after the
        reply (`after_reply`), not now, on the reply path."""
        if self._hybrid is not None and text.strip():
            self._pending.append((self._workspace.scope, path, text))

    def after_reply(self) -> None:
        """Off the reply path, at the end of a job: index the documents stored meanwhile (each
        in the scope it came from), then the current scope's memory and history if they
        changed since this container last indexed them, and get the index ready for the next
        turn. Failures are logged; what was not stored is picked up by a later call."""
        hybrid, indexer, workspace = self._hybrid, self._indexer, self._workspace
        if hybrid is None or indexer is None:
            return
        scope = workspace.scope
        pending, self._pending = self._pending, []
        for noted, path, text in pending:
            if noted == scope:
                index_quietly(partial(indexer.add_document, scope, path, text))
            else:  # noted by a job that failed before its end: its retry notes it again
                logger.info("document not indexed: its job did not finish", extra={"path": path})
        signature = self._signature()
        changed = self._indexed.get(scope) != signature
        if changed and index_quietly(partial(indexer.index_scope, scope, workspace)) is not None:
            self._indexed[scope] = signature
        hybrid.prepare()

    def _signature(self) -> tuple[str, ...]:
        """The ETags of the current scope's MEMORY.md and history files (free on a warm turn:
        the workspace's listing has them)."""
        paths = [MEMORY_FILE, *history_files(self._workspace)]
        files = [self._workspace.read(path) for path in paths]
        return tuple(file.etag if file is not None else "" for file in files)
