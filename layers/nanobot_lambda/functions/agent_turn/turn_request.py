"""A turn's first request to the model, what every job kind shares (turn.py's step 3):
the runtime block (the time, the chat, what recall found), and a request that fits the model's
window. What the request says (the user's words, a task's prompt) is the job kind's.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from nanobot_lambda.core.context import RuntimeContext, earlier_blocks
from nanobot_lambda.core.ports import SessionStore
from nanobot_lambda.core.sessions import Message, SessionHistory
from nanobot_lambda.functions.agent_turn.consolidation import Consolidation, consolidate_quietly
from nanobot_lambda.functions.agent_turn.recall import TurnRecall
from nanobot_lambda.functions.agent_turn.turn_run import TurnRun
from nanobot_lambda.settings import AgentSettings
from nanobot_lambda.tools.context import JobContext

# Consolidations a turn may run first to make its request fit the model's window (each one
# summarises what fits one model request).
BUDGET_CONSOLIDATIONS = 3


class TurnRequests:
    def __init__(
        self,
        recall: TurnRecall,
        fits: Callable[[JobContext, list[Message]], bool],
        consolidation: Consolidation,
        sessions: SessionStore,
        settings: AgentSettings,
        clock: Callable[[], datetime],
    ) -> None:
        self._recall = recall
        # Whether a request fits the job's model's window with the job's tools.
        self._fits = fits
        self._consolidation = consolidation
        self._sessions = sessions
        self._settings = settings
        self._clock = clock

    def runtime(self, chat_id: int, recalled: list[str] | None = None) -> RuntimeContext:
        """The runtime block of the request: the time, the chat, what recall found."""
        return RuntimeContext(
            self._clock(), self._settings.timezone, "telegram", str(chat_id), tuple(recalled or ())
        )

    def runtime_block(
        self,
        ctx: JobContext,
        run: TurnRun,
        recall_for: str | None = None,
        history: list[Message] | None = None,
    ) -> str:
        """The run's rendered runtime block: the one an earlier run of the turn recorded (so a
        continued turn sends the very request it sent before), else rendered now, with what recall
        finds for `recall_for` in the job's scope, and kept in the run's record. What a block of
        `history` (the messages the request sends) already states is left out: the standing lines
        (timezone, chat) it states alike, and the recalled entries it shows. When a request must
        then shed its oldest history to fit (`that_fits`), it may lack the standing lines for that
        one turn; the time is always there, and the next turn states them again."""
        if run.progress.context is None:
            earlier = earlier_blocks(history or [])
            shown = "\n".join(earlier)
            recalled = self._recall.search(ctx, recall_for, shown) if recall_for else []
            run.progress.context = self.runtime(ctx.chat_id, recalled).render(earlier)
        return run.progress.context

    def that_fits(
        self,
        ctx: JobContext,
        history: SessionHistory,
        build: Callable[[list[Message]], list[Message]],
    ) -> list[Message]:
        """The turn's first request, `build` from the history: when it would not fit the
        model's window, or the session holds more unsummarised messages than the history window
        sends (the consolidation after an earlier turn failed, a turn added a great deal,
        HISTORY_WINDOW was lowered), the oldest exchanges are summarised first, a slice at a
        time, and it is built again: no message leaves what the model sees unsummarised. What
        still does not fit, the request fitter leaves out of this request only (it stays in the
        session, to be summarised later)."""
        request = build(history.messages)
        for _ in range(BUDGET_CONSOLIDATIONS):
            whole = history.unconsolidated <= self._settings.history_window
            if (whole and self._fits(ctx, request)) or not self._consolidation.due(history):
                break
            cursor = history.consolidated_upto
            consolidate_quietly(self._consolidation.of(ctx), history.key)
            fresh = self._sessions.load(history.key, self._settings.history_window)
            if fresh.consolidated_upto == cursor:
                break  # it failed: nothing more to try now
            history.messages, history.consolidated_upto = fresh.messages, fresh.consolidated_upto
            # This turn's answer tells of it (unless the chat was told lately).
            history.noticed_upto, history.noticed_at = fresh.noticed_upto, fresh.noticed_at
            request = build(history.messages)
        return request
