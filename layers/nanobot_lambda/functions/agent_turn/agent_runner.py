"""Running the agent loop for one run of a turn: what it shows while it works, when it stops,
what it records before and after each step, and what happens when the model or the time runs
out. And the loops themselves, made for each job (`AgentLoops`): the model its chat chose, the
tools it is offered, its meter, all from the job's context (tools/context.py).

A turn that cannot be answered (every model attempt failed; or it continued in new invocations
as often as it may) ends: the journal records that first, then the chat is told once, then the
turn is closed without saving anything. When the model's failure is a setup problem (a refused
key, a model that does not exist), the chat is told the assistant is not set up right and the
owner what to fix (spending.py's SetupNotices), not "send it again in a moment". A later run of
it (its job delivered again after a crash between those steps) only finishes that: it repeats
the message if it was not accepted yet and closes the turn; it never asks the model again after
the user was told to send the message again.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from nanobot_lambda.adapters.telegram.places import session_key_for
from nanobot_lambda.core import texts
from nanobot_lambda.core.agent import AgentLoop, Resume, TurnOutcome
from nanobot_lambda.core.budget import RequestFitter
from nanobot_lambda.core.errors import ModelError
from nanobot_lambda.core.model_choice import ModelOptions
from nanobot_lambda.core.ports import ChatModel, StopFlags, TurnJournal
from nanobot_lambda.core.sessions import Message
from nanobot_lambda.functions.agent_turn.approvals import Approvals
from nanobot_lambda.functions.agent_turn.continuation import Continuation, TurnSuspended
from nanobot_lambda.functions.agent_turn.saving import TurnSaver
from nanobot_lambda.functions.agent_turn.spending import SetupNotices
from nanobot_lambda.functions.agent_turn.turn_run import TurnRun, checkpoint
from nanobot_lambda.settings import AgentSettings, LoopSettings
from nanobot_lambda.tools.context import JobContext

logger = logging.getLogger(__name__)

MODEL_ERROR = "model_error"  # the texts/ a turn ends with, unanswered
TURN_TOO_LONG = "turn_too_long"
# Seconds a step's tools leave of the invocation, to record their results.
TOOL_TIME_MARGIN_SECONDS = 5


@dataclass(frozen=True)
class GoingOn:
    """How a turn goes on in another invocation: out of time (its continuation, queued), or
    when a call waits for a person (its approval, asked)."""

    continuation: Continuation
    approvals: Approvals


class AgentRunner:
    def __init__(
        self,
        journal: TurnJournal,
        stop_flags: StopFlags,
        going_on: GoingOn,
        saver: TurnSaver,
        settings: LoopSettings,
        setup_notices: SetupNotices,
    ) -> None:
        self._journal = journal
        self._approvals = going_on.approvals
        self._setup_notices = setup_notices
        self._stop_flags = stop_flags
        self._continuation = going_on.continuation
        self._saver = saver
        self._settings = settings

    def run(
        self,
        loop: AgentLoop[JobContext],
        ctx: JobContext,
        request: list[dict[str, Any]],
        run: TurnRun,
        log: dict[str, Any],
        *,
        apologise: bool = True,
    ) -> TurnOutcome | None:
        """Run (or resume) the turn's loop. None when the turn ended unanswered (the model
        failed; the user was told, if `apologise`, and the turn is closed); raises
        TurnSuspended when the turn goes on in another invocation: after it ran out of time,
        or when a call waits for a person's approval (approvals.py: asked, nothing waits)."""
        if run.progress.ended is not None:
            logger.info("turn had ended unanswered: finishing that", extra=log)
            self._end(ctx, run, run.progress.ended)
            return None
        if self._approvals.waits(ctx, run):
            raise TurnSuspended  # a resume for an approval decided before, or not this turn's

        session_key = session_key_for(ctx.chat_id, ctx.thread_id)

        def progress(text: str) -> None:
            run.outbox.send(ctx.chat_id, text, ctx.thread_id)

        def stop_requested() -> bool:
            # Any flag counts: /stop is queued behind the turns it should stop, and it clears
            # the flag when it is processed; a leaked flag expires within the hour.
            return ctx.origin == "user" and self._stop_flags.requested_since(session_key, 0)

        recorded = run.progress
        # An answered turn is resumed even when its answer took no model call (a spending limit).
        resumed = recorded.iterations or recorded.answered
        resume = Resume(recorded.messages, recorded.iterations) if resumed else None
        show_progress = self._settings.send_progress and ctx.origin != "subagent" and not ctx.quiet

        def record(outcome: TurnOutcome) -> None:
            checkpoint(self._journal, run, outcome)

        try:
            outcome = loop.run(
                ctx,
                request,
                on_progress=progress if show_progress else None,
                should_stop=stop_requested,
                resume=resume,
                on_step=record,
                on_iteration=record,
                time_left=run.deadline(self._settings.turn_time_reserve_seconds),
                tool_time_left=run.deadline(TOOL_TIME_MARGIN_SECONDS),
                on_text=run.outbox.draft if run.outbox.drafting else None,
                gate=self._approvals.gate(run, request),
            )
        except ModelError as error:
            logger.error("model call failed: %s", error, extra=log)
            # A setup problem is the owner's to fix, whoever's turn met it: they are told.
            setup_text = self._setup_notices.tell(ctx, run, error)
            if apologise:
                self._end(ctx, run, setup_text or MODEL_ERROR)
                return None
            self._journal.discard(run.journal_key, run.progress)
            return None
        if outcome.awaiting:
            checkpoint(self._journal, run, outcome)  # the waiting call, with the step
            self._approvals.ask(ctx, run)
            logger.info("turn waits for an approval", extra=log)
            raise TurnSuspended
        if outcome.suspended:
            if run.progress.continuations >= self._settings.max_continuations:
                logger.error(
                    "turn gave up after %d continuations", run.progress.continuations, extra=log
                )
                self._end(ctx, run, TURN_TOO_LONG)
                return None
            self._continuation.suspend(ctx, run, log)
        return outcome

    def _end(self, ctx: JobContext, run: TurnRun, text: str) -> None:
        """End the turn unanswered with the text named `text`: recorded (with the number its
        message gets, so a later run of the turn knows it for the same message), said, closed."""
        progress = run.progress
        if progress.ended is None:
            self._journal.end(run.journal_key, progress, text, run.outbox.count + 1)
        run.outbox.count = progress.ended_at - 1
        run.outbox.send(ctx.chat_id, texts.load(text), ctx.thread_id)
        self._saver.close(ctx, run, text)


class AgentLoops:
    """The agent loops of a job, made for its context: a chat's turn's (MAX_TOOL_ITERATIONS),
    the heartbeat's (HEARTBEAT_MODEL, if set) and a background task's
    (SUBAGENT_MAX_ITERATIONS). Each runs the job's tools (`ctx.tools`: which ones is its
    kind's, kinds.py), with the model its chat chose (`ctx.model`; the default outside a
    session), metered for its chat (`ctx.meter`), each request fitted to that model's window."""

    def __init__(
        self, settings: AgentSettings, models: ModelOptions, heartbeat_model: ChatModel | None
    ) -> None:
        self._settings = settings
        self._models = models
        self._heartbeat_model = heartbeat_model  # HEARTBEAT_MODEL; None: the chat's model

    def chat(self, ctx: JobContext) -> AgentLoop[JobContext]:
        return self._loop(ctx, self._models.model(ctx.model), self._settings.max_tool_iterations)

    def heartbeat(self, ctx: JobContext) -> AgentLoop[JobContext]:
        model = self._heartbeat_model or self._models.model(ctx.model)
        return self._loop(ctx, model, self._settings.max_tool_iterations)

    def subagent(self, ctx: JobContext) -> AgentLoop[JobContext]:
        model = self._models.model(ctx.model)
        return self._loop(ctx, model, self._settings.subagent_max_iterations)

    def heartbeat_model(self, ctx: JobContext) -> ChatModel:
        """The model that decides whether a standing task is due, metered for the job."""
        return ctx.meter.metered(self._heartbeat_model or self._models.model(ctx.model))

    def fits(self, ctx: JobContext, request: list[Message]) -> bool:
        """Whether `request` fits the job's model's window with the job's tools."""
        return self._fitter(ctx).fits(request, ctx.tools.definitions())

    def _fitter(self, ctx: JobContext) -> RequestFitter:
        choice, models = ctx.model, self._models
        return RequestFitter(models.tokens(choice), lambda: models.request_budget(choice))

    def _loop(
        self, ctx: JobContext, model: ChatModel, max_iterations: int
    ) -> AgentLoop[JobContext]:
        settings = self._settings
        return AgentLoop(
            ctx.meter.metered(model),
            ctx.tools,
            max_iterations,
            tool_result_max_chars=settings.tool_result_max_chars,
            tool_hints=settings.send_tool_hints,
            fitter=self._fitter(ctx),
        )
