"""Running the agent loop for one run of a turn: what it shows while it works, when it stops,
what it records after each iteration, and what happens when the model or the time runs out."""

from __future__ import annotations

import logging
from typing import Any

from nanobot_lambda.adapters.telegram.inbound import session_key_for
from nanobot_lambda.core import texts
from nanobot_lambda.core.agent import AgentLoop, Resume, TurnOutcome
from nanobot_lambda.core.errors import ModelError
from nanobot_lambda.core.ports import StopFlags, TurnJournal
from nanobot_lambda.entry.agent_turn.continuation import Continuation
from nanobot_lambda.entry.agent_turn.run import TurnRun, checkpoint
from nanobot_lambda.settings import LoopSettings
from nanobot_lambda.tools.chat import TurnScope

logger = logging.getLogger(__name__)


class AgentRunner:
    def __init__(
        self,
        journal: TurnJournal,
        stop_flags: StopFlags,
        continuation: Continuation,
        settings: LoopSettings,
    ) -> None:
        self._journal = journal
        self._stop_flags = stop_flags
        self._continuation = continuation
        self._settings = settings

    def run(
        self,
        loop: AgentLoop,
        request: list[dict[str, Any]],
        scope: TurnScope,
        run: TurnRun,
        log: dict[str, Any],
        *,
        apologise: bool = True,
    ) -> TurnOutcome | None:
        """Run (or resume) the turn's loop. None when the model failed (the user was told, if
        `apologise`); raises TurnSuspended when the turn goes on in another invocation."""

        session_key = session_key_for(scope.chat_id, scope.thread_id)

        def progress(text: str) -> None:
            run.outbox.send(scope.chat_id, text, scope.thread_id)

        def stop_requested() -> bool:
            # Any flag counts: /stop is queued behind the turns it should stop, and it clears
            # the flag when it is processed; a leaked flag expires within the hour.
            return scope.origin == "user" and self._stop_flags.requested_since(session_key, 0)

        recorded = run.progress
        resume = Resume(recorded.messages, recorded.iterations) if recorded.iterations else None
        show_progress = (
            self._settings.send_progress and scope.origin != "subagent" and not scope.quiet
        )
        try:
            outcome = loop.run(
                request,
                on_progress=progress if show_progress else None,
                should_stop=stop_requested,
                resume=resume,
                on_iteration=lambda outcome: checkpoint(self._journal, run, outcome),
                time_left=run.deadline(self._settings.turn_time_reserve_seconds),
                on_text=run.outbox.draft if run.outbox.drafting else None,
            )
        except ModelError as error:
            logger.error("model call failed: %s", error, extra=log)
            if apologise:
                run.outbox.send(scope.chat_id, texts.load("model_error"), scope.thread_id)
            self._journal.discard(run.journal_key, run.progress)
            return None
        if outcome.suspended:
            self._continuation.suspend(run, scope, log)
        return outcome
