"""Recall as a turn uses it: one object per container, BM25 alone or hybrid (docs/memory.md).

agent_turn builds one `TurnRecall` beside its other parts and calls it at three points:

- `search(message, shown)` when it renders a run's runtime block (in place of
  `HistoryRecall.search`, same arguments, same result);
- `index_scope()` after a consolidation that moved the cursor, off the reply path (the chat's
  MEMORY.md and HISTORY.md changed there);
- `index_document(path, text)` after a document's text is stored beside its upload.

Without `EMBEDDING_MODEL` (no embedder) it is the BM25 recall it always was, and the other two
do nothing: no index, no request, no cost. With one, every embedding goes through the meter
(counted for the job's chat, refused past a spending limit), and the index is the scope's the
workspace switch points at (core/scopes.py: `ScopeSwitch`), so each chat reads and writes its
own scope's index only. Indexing failures are logged, never raised.
"""

from __future__ import annotations

import logging

from nanobot_lambda.core.hybrid_recall import (
    HybridRecall,
    RecallIndexer,
    RecallLimits,
    ScopeIndexes,
    index_quietly,
)
from nanobot_lambda.core.ports import Embedder, RecallIndexObjects
from nanobot_lambda.core.recall import HistoryRecall
from nanobot_lambda.core.scopes import ScopeSwitch
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

    @property
    def hybrid(self) -> bool:
        return self._hybrid is not None

    def search(self, query: str, shown: str = "") -> list[str]:
        """The entries to recall for the user's message (see `HistoryRecall.search`)."""
        if self._hybrid is None:
            return self._words.search(query, shown)
        return self._hybrid.search(query, shown)

    def index_scope(self) -> None:
        """Bring the current scope's memory and history into its index, and get the index
        ready for the next turn. Off the reply path; a failure is logged."""
        hybrid, indexer, workspace = self._hybrid, self._indexer, self._workspace
        if hybrid is None or indexer is None:
            return
        if index_quietly(lambda: indexer.index_scope(workspace.scope, workspace)) is not None:
            hybrid.prepare()

    def index_document(self, path: str, text: str) -> None:
        """Index a document's extracted text (`path`: where it is stored in the scope)."""
        hybrid, indexer, scope = self._hybrid, self._indexer, self._workspace.scope
        if hybrid is None or indexer is None or not text.strip():
            return
        if index_quietly(lambda: indexer.add_document(scope, path, text)) is not None:
            hybrid.prepare()
