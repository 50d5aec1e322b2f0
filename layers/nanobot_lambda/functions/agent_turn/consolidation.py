"""Consolidation for a job (core/consolidation.py): the job's scope's memory, summarised by
CONSOLIDATION_MODEL or, without it, by the model the job's chat chose, its calls counted and
limited for the job's chat. Made for each job from its context (tools/context.py); a turn
consolidates after its answer (turn.py) or before its request when it would not fit
(turn_request.py), /new and /compact when asked (memory_commands.py)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime

from nanobot_lambda.core.budget import HistoryBudget
from nanobot_lambda.core.consolidation import ConsolidationError, Consolidator
from nanobot_lambda.core.model_choice import ModelOptions
from nanobot_lambda.core.ports import ChatModel, SessionStore
from nanobot_lambda.core.sessions import SessionHistory
from nanobot_lambda.tools.context import JobContext

logger = logging.getLogger(__name__)


class Consolidation:
    def __init__(
        self,
        sessions: SessionStore,
        budget: HistoryBudget,
        models: ModelOptions,
        model: ChatModel | None,
        *,
        timezone: str,
        clock: Callable[[], datetime],
    ) -> None:
        self._sessions = sessions
        self.budget = budget
        self._models = models
        self._model = model  # CONSOLIDATION_MODEL; None: the chat's model
        self._timezone = timezone
        self._clock = clock

    def due(self, history: SessionHistory) -> bool:
        return self.budget.over(history.messages, history.unconsolidated)

    def of(self, ctx: JobContext) -> Consolidator:
        """The job's consolidator: its scope's memory, its chat's model, its meter."""
        model = self._model or self._models.model(ctx.model)
        return Consolidator(
            ctx.meter.metered(model),
            ctx.workspace,
            self._sessions,
            self.budget,
            timezone=self._timezone,
            clock=self._clock,
        )


def consolidate_quietly(consolidator: Consolidator, key: str) -> None:
    """Consolidate after the turn is answered and saved; a failure is retried on a later turn."""
    try:
        consolidator.consolidate(key)
    except ConsolidationError as error:
        logger.warning("consolidation failed, will retry later: %s", error)
    except Exception:
        logger.exception("consolidation failed unexpectedly, will retry later")
