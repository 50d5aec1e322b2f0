"""Recall as a turn uses it: one object per container, BM25 alone or hybrid (docs/memory.md).

agent_turn builds one `TurnRecall` beside its other parts and uses it at two points, each time
with the job's context (tools/context.py: its scope's workspace, and its meter):

- `search(ctx, message, shown)` when it renders a run's runtime block (in place of
  `HistoryRecall.search`, same result);
- `after_reply(ctx, documents)` at the end of a job, while its meter counts (so that the
  embeddings are the job's chat's), after the reply is sent and saved and any consolidation has
  run: the documents the job stored (their text beside their upload, messages.py) are indexed,
  then the scope's MEMORY.md and history if their ETags changed since this container indexed
  them (so a turn that changed nothing embeds nothing and reads nothing but the cached listing),
  and the index is made ready for the next turn (`HybridRecall.prepare`).

Without `EMBEDDING_MODEL` (no embedder) it is the BM25 recall it always was, and indexing does
nothing: no index, no request, no cost. With one, every embedding goes through the job's meter
(counted for the job's chat, refused past a spending limit), and the index is the job's scope's,
so each chat reads and writes its own scope's index only. Indexing failures are logged, never
raised.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from functools import partial

from nanobot_lambda.core.hybrid_recall import (
    HybridRecall,
    RecallIndexer,
    RecallLimits,
    ScopeIndexes,
    index_quietly,
)
from nanobot_lambda.core.memory import MEMORY_FILE, history_files
from nanobot_lambda.core.ports import Embedder, RecallIndexObjects, Workspace
from nanobot_lambda.core.recall import HistoryRecall
from nanobot_lambda.core.scopes import Scope
from nanobot_lambda.settings import AgentSettings
from nanobot_lambda.tools.context import JobContext

logger = logging.getLogger(__name__)


class TurnRecall:
    def __init__(
        self,
        settings: AgentSettings,
        embedder: Embedder | None = None,
        indexes: RecallIndexObjects | None = None,
    ) -> None:
        self._words = HistoryRecall(max_chars=settings.recall_max_chars)
        self._embedder = embedder  # metered for each job (its chat pays)
        self._hybrid: HybridRecall | None = None
        self._indexes: ScopeIndexes | None = None
        if embedder is not None and indexes is not None and settings.embedding_model:
            self._indexes = ScopeIndexes(indexes, settings.embedding_model)
            limits = RecallLimits(
                max_chars=settings.recall_max_chars,
                min_similarity=settings.recall_min_similarity,
            )
            self._hybrid = HybridRecall(self._indexes, limits)
        # Each scope's files when this container last indexed them (a cache, by version).
        self._indexed: dict[Scope, tuple[str, ...]] = {}

    @property
    def hybrid(self) -> bool:
        return self._hybrid is not None

    def search(self, ctx: JobContext, query: str, shown: str = "") -> list[str]:
        """The entries to recall for the user's message, in the job's scope (see
        `HistoryRecall.search`)."""
        embedder = ctx.meter.metered_embedder(self._embedder)
        if self._hybrid is None or embedder is None:
            return self._words.search(ctx.workspace, query, shown)
        return self._hybrid.search(
            query, shown, workspace=ctx.workspace, scope=ctx.subject.scope, embedder=embedder
        )

    def after_reply(self, ctx: JobContext, documents: Sequence[tuple[str, str]] = ()) -> None:
        """Off the reply path, at the end of a job: index the `documents` it stored ((path,
        text) in its scope), then its scope's memory and history if they changed since this
        container last indexed them, and get the index ready for the next turn. Failures are
        logged; what was not stored is picked up by a later call."""
        hybrid, indexes = self._hybrid, self._indexes
        embedder = ctx.meter.metered_embedder(self._embedder)
        if hybrid is None or indexes is None or embedder is None:
            return
        indexer = RecallIndexer(indexes, embedder)
        scope, workspace = ctx.subject.scope, ctx.workspace
        for path, text in documents:
            if text.strip():
                index_quietly(partial(indexer.add_document, scope, path, text))
        signature = _signature(workspace)
        changed = self._indexed.get(scope) != signature
        if changed and index_quietly(partial(indexer.index_scope, scope, workspace)) is not None:
            self._indexed[scope] = signature
        hybrid.prepare(workspace, scope)


def _signature(workspace: Workspace) -> tuple[str, ...]:
    """The ETags of the scope's MEMORY.md and history files (free on a warm turn: the
    workspace's listing has them)."""
    paths = [MEMORY_FILE, *history_files(workspace)]
    files = [workspace.read(path) for path in paths]
    return tuple(file.etag if file is not None else "" for file in files)
