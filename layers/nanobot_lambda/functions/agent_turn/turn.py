"""A turn, top to bottom: the steps every job kind's turn takes, in the order they run.

`run_turn` is the sequence; a job kind (messages.py, scheduled.py, background.py) supplies only
what differs, as a `JobTurn`: where its turn lives, its prompt, its loop, and what it does with
the answer. The steps:

1. open: the kind says where the turn lives (its id; the session it is saved into, or its own
   journal key), or that there is nothing to answer (a command answered, a message not for the
   bot, a part of an album another turn answers);
2. start or resume: the turn's record is read from its journal (turn_run.py); a turn done before
   is skipped, one cut short resumes where it was; a person's new message finds an earlier turn
   of the conversation waiting for an approval: that one is finished first (approvals.py,
   `AnotherTurnWaits`); the kind may still decline (`ready`); the
   job's context takes the run (its outbox), and a session's turn is answered by its chat's
   model (/model, /think: core/model_choice.py, `JobContext.with_model`);
3. build the request, in the job's scope (the context's workspace): the kind's prompt, with the
   runtime block and, for a session, its history, fitted to the model's window (turn_request.py);
   a person's turn first tells the chat when earlier conversation was summarised since it was
   last told (delivery.py: `tell_compaction`);
4. run the loop (agent_runner.py): the agent loop runs or resumes, each step recorded; a turn
   out of time continues in another invocation (continuation.py: `TurnSuspended` ends this run
   here); a turn the model failed ends unanswered, and the kind says what that means;
5. deliver: the answer goes to the chat through the run's outbox, once (delivery.py), unless the
   kind keeps it (nothing to report) or hands it on (a background task's announcement); a turn
   whose record says it was answered (an earlier run delivered it, then its save failed) is not
   delivered again;
6. save: a session's turn is saved with its answer, its record closed in the same transaction
   (saving.py; a failed save records the turn as answered for SQS's retry); a turn outside a
   session has its record marked done;
7. the kind's bookkeeping (`finished`): a scheduled task's last run, the turn's log line;
8. consolidate: when the session has grown enough, after everything else, so the user never
   waits for it;
9. index for recall (recall.py, `TurnRecall.after_reply`): with EMBEDDING_MODEL, the
   documents the job stored and the scope's memory and history if they changed (consolidation
   included), embedded for the job's chat; without it, nothing. Every job that ends takes this
   step, a command's too (/new's archive); a turn suspended to continue in another invocation
   does not (its continuation will), nor a job that raised (its retry will).

The reply is sent before the turn is saved: if sending fails the job is retried by SQS and the
session holds no answer the user never saw.
"""

from __future__ import annotations

import logging
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, TypeVar

from nanobot_lambda.core.agent import AgentLoop, TurnOutcome
from nanobot_lambda.core.errors import StorageError
from nanobot_lambda.core.jobs import StartJob
from nanobot_lambda.core.sessions import Message, SessionHistory
from nanobot_lambda.functions.agent_turn.approvals import AnotherTurnWaits, waiting_turn
from nanobot_lambda.functions.agent_turn.consolidation import consolidate_quietly
from nanobot_lambda.functions.agent_turn.continuation import TurnSuspended
from nanobot_lambda.functions.agent_turn.queued import QueuedJob
from nanobot_lambda.functions.agent_turn.turn_deps import TurnDeps
from nanobot_lambda.functions.agent_turn.turn_run import Opening, RemainingMillis, TurnRun
from nanobot_lambda.tools.context import JobContext, TurnOrigin

logger = logging.getLogger(__name__)

J = TypeVar("J", bound=StartJob)


@dataclass(frozen=True)
class Request:
    """A turn's first request: its messages, the loop that answers them, and the message its
    session saves first (the user's words, or a task's prompt; None outside a session)."""

    messages: list[Message]
    loop: AgentLoop[JobContext]
    saved_first: dict[str, Any] | None = None


class JobTurn(Generic[J]):
    """What one job kind's turn supplies to `run_turn`; the defaults are the common case. Made
    for each job; every step is given the job's context as it stands then (tools/context.py)."""

    origin: ClassVar[TurnOrigin]
    apologise = False  # a model failure is told to the chat (only a person waits for an answer)

    def __init__(self, deps: TurnDeps, job: J) -> None:
        self.deps = deps
        self.job = job
        self.log: dict[str, Any] = {}  # the ids on the turn's log lines
        self.documents: list[tuple[str, str]] = []  # (path, text) it stored: indexed for recall

    @property
    def quiet(self) -> bool:
        """Shows no progress while it works."""
        return False

    def open(self, ctx: JobContext) -> Opening | None:
        raise NotImplementedError

    def recorded_at(self, queued: QueuedJob) -> Opening | None:
        """Where the turn's journal record is, from the job as queued, running nothing (`open`
        may answer a command or ask Telegram): read for a job that failed for the last time
        (dispatch.py, `give_up`). None: not known before the turn opens."""
        return None

    def ready(self, ctx: JobContext, run: TurnRun) -> bool:
        """The last check before the model, once the turn's record is read."""
        return True

    def showing(self, ctx: JobContext, run: TurnRun) -> AbstractContextManager[object]:
        """What the chat sees while the turn works ("typing…", drafts)."""
        return nullcontext()

    def request(
        self, ctx: JobContext, run: TurnRun, history: SessionHistory | None
    ) -> Request | None:
        """The turn's first request; None: there is nothing to ask the model after all."""
        raise NotImplementedError

    def unanswered(self, ctx: JobContext, run: TurnRun) -> None:
        """The model failed (a turn that apologises was told and closed by the runner)."""

    def deliver(self, ctx: JobContext, run: TurnRun, outcome: TurnOutcome) -> bool:
        """The answer to the chat; False when it is not to be saved (the chat blocked the
        bot)."""
        return self.deps.delivery.deliver(ctx, run, outcome)

    def finished(self, ctx: JobContext, run: TurnRun, outcome: TurnOutcome) -> None:
        """After the turn was delivered (and saved, if it was delivered)."""


def run_turn(
    deps: TurnDeps, kind: JobTurn[Any], ctx: JobContext, remaining_ms: RemainingMillis | None
) -> None:
    """One job's turn, in the job's context (dispatch.py made it), then its indexing."""
    if _take_turn(deps, kind, ctx, remaining_ms):
        deps.recall.after_reply(ctx, kind.documents)


def _take_turn(
    deps: TurnDeps, kind: JobTurn[Any], ctx: JobContext, remaining_ms: RemainingMillis | None
) -> bool:
    """Steps 1-8; False when the turn was suspended to continue in another invocation."""
    opening = kind.open(ctx)
    if opening is None:
        return True
    history, run = deps.starter.start(kind.job, opening, remaining_ms)
    if run is None:
        return True
    if ctx.origin == "user" and ctx.approval is None and history is not None:
        waiting = waiting_turn(history.open_turns, run.progress.turn_id)
        if waiting is not None:
            raise AnotherTurnWaits(waiting)  # that turn first (dispatch.py), then this one
    ctx = ctx.with_run(run.progress.turn_id, run.outbox)
    if not kind.ready(ctx, run):
        return True
    try:
        return _answer(deps, kind, ctx, history, run)
    finally:
        _record_answers(deps, run)


def _answer(
    deps: TurnDeps,
    kind: JobTurn[Any],
    ctx: JobContext,
    history: SessionHistory | None,
    run: TurnRun,
) -> bool:
    """Steps 3-8 of a turn that started."""
    if history is not None:  # its chat's /model and /think answer it
        ctx = ctx.with_model(deps.menu.choice(history.preferences))
    with kind.showing(ctx, run):
        request = kind.request(ctx, run, history)
        if request is None:
            return True
        if history is not None and kind.apologise:  # a person waits for this answer
            deps.delivery.tell_compaction(ctx, run, history)
        try:
            outcome = deps.runner.run(
                request.loop, ctx, request.messages, run, kind.log, apologise=kind.apologise
            )
        except TurnSuspended:
            return False  # recorded; its continuation is queued
    if outcome is None:
        kind.unanswered(ctx, run)
        return True
    if run.progress.answered or kind.deliver(ctx, run, outcome):
        if history is None:
            deps.ports.stores.journal.mark_done(run.journal_key, run.progress)
        else:
            assert request.saved_first is not None, "a session's turn saves its first message"
            deps.saver.save(ctx, history, request.saved_first, outcome, run)
    kind.finished(ctx, run, outcome)
    if history is not None and deps.consolidation.due(history):
        consolidate_quietly(deps.consolidation.of(ctx), history.key)
    return True


def _record_answers(deps: TurnDeps, run: TurnRun) -> None:
    """Keep the messages the run sent as the bot's (core/reactions_and_edits.py: the reactions to
    them are the reactions to answers), however the run ended: those its save did not record (a turn
    saved records them in its transaction, saving.py). A failure only costs that tally:
    logged."""
    for chat_id, message_ids in run.outbox.sent_by_chat().items():
        try:
            deps.ports.stores.feedback.record_answers(chat_id, message_ids)
        except StorageError as error:
            logger.warning("could not record the turn's answers (%s)", type(error).__name__)
    run.outbox.sent_recorded(len(run.outbox.sent_ids))
