"""agent_turn's dispatcher: one queued job in, its context made, its kind's turn run.

Jobs (core/jobs.py), each with its kind of turn: a Telegram message (messages.py); the heartbeat
and a scheduled task (scheduled.py); a background task and the announcement of its end to its
chat (background.py); an event at one of the owner's hooks (events.py). A continuation is the
rest of a turn that ran out of Lambda time: it runs the turn of the job it carries, which
resumes from its journal. Every kind's turn takes the same steps, in the order turn.py states
them.

The reply is sent before the turn is saved: if sending fails the job is retried by SQS and the
session holds no answer the user never saw. A model failure gets the user a short apology and
saves nothing, so the user can simply send the message again. Memory consolidation runs after
the reply is out, so the user never waits for it; if it fails it is retried on a later turn.

Exactly once: each turn has an id from its job and a journal (core/journal.py). A job delivered
again after its turn was saved is skipped; a turn cut short (a crash, an error SQS retries, the
end of the Lambda invocation) resumes from its last completed iteration, and messages it already
sent are not sent again (outbox.py). Near the invocation's time limit the turn records where it
is, tells the user it is still working, and queues a continuation of itself (continuation.py).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Literal

from nanobot_lambda.adapters.telegram.inbound import InboundMessage
from nanobot_lambda.core import texts
from nanobot_lambda.core.jobs import ApprovalJob, ContinuationJob, parse_start_job
from nanobot_lambda.core.journal import progress_in
from nanobot_lambda.core.subjects import NoSubject, Subject
from nanobot_lambda.functions.agent_turn.approvals import AnotherTurnWaits
from nanobot_lambda.functions.agent_turn.kinds import kind_of, subject_of
from nanobot_lambda.functions.agent_turn.outbox import send_unjournaled
from nanobot_lambda.functions.agent_turn.queued import QueuedJob
from nanobot_lambda.functions.agent_turn.turn import run_turn
from nanobot_lambda.functions.agent_turn.turn_deps import TurnPorts, build_turn_deps
from nanobot_lambda.functions.agent_turn.turn_run import RemainingMillis
from nanobot_lambda.settings import AgentSettings
from nanobot_lambda.tools.context import JobContext

logger = logging.getLogger(__name__)


class Dispatcher:
    def __init__(
        self,
        settings: AgentSettings,
        ports: TurnPorts,
        *,
        environ: Mapping[str, str],
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.deps = build_turn_deps(settings, ports, environ, clock)

    def process(self, queued: QueuedJob, remaining_ms: RemainingMillis | None = None) -> None:
        """Run the job's turn; `remaining_ms` is the invocation's time left (Lambda context).

        The job's subject (its chat, topic, person and scope: core/subjects.py) is derived
        first, once, and its context made from it (tools/context.py): the turn works in its
        scope, answers in its chat, and its model calls are counted and limited for that chat.
        A job without one raises NoSubject before anything runs (sqs_records.py: it goes to the
        dead-letter queue, nothing answered)."""
        deps, kind = self.deps, kind_of(queued)
        subject = subject_of(queued, deps.settings.owner)
        if kind.unsent and not deps.audience.still_heard(subject.chat_id):
            # Its person may no longer talk to the bot (taken out of ALLOW_FROM, or off the
            # approved list): their schedules and background work stop with them.
            logger.info("job of a chat no longer allowed: skipped", extra={"kind": kind.name})
            return
        try:
            self._run(queued, subject, remaining_ms)
        except AnotherTurnWaits as waiting:
            # The person wrote again while a call waited for an approval: that turn is
            # finished first (its call denied, "the person moved on"), then this message.
            if not self._move_on(waiting.approval_id, remaining_ms):
                raise
            self._run(queued, subject, remaining_ms)

    def _move_on(self, approval_id: str, remaining_ms: RemainingMillis | None) -> bool:
        """Finish the turn waiting on `approval_id`, its call denied; False when its approval
        is not known (the message then fails, for SQS to retry)."""
        approval = self.deps.ports.stores.approvals.get(approval_id)
        if approval is None:
            logger.error("a turn waits on an approval that is not recorded")
            return False
        moved_on = ApprovalJob(
            job=parse_start_job(approval.job),
            approval_id=approval_id,
            decision="moved_on",
            decided_at=self.deps.clock().astimezone(UTC).isoformat(timespec="seconds"),
        )
        self.process(QueuedJob.of(moved_on), remaining_ms)
        return True

    def _run(
        self, queued: QueuedJob, subject: Subject, remaining_ms: RemainingMillis | None
    ) -> None:
        deps, kind = self.deps, kind_of(queued)
        turn = kind.turn(deps, queued.started)
        with deps.meter.job(subject, continued=queued.continued) as meter:
            workspace = deps.scopes.of(subject.scope)
            workspace.refresh()  # one listing: the scope's files as they are now
            ctx = JobContext(
                job=queued.started,
                subject=subject,
                origin=turn.origin,
                workspace=workspace,
                tools=deps.tools.for_job(subject.chat_id, chat_tools=kind.chat_tools),
                meter=meter,
                continued=queued.continued,
                quiet=turn.quiet,
                update=queued.update,
                inbound=queued.inbound,
                approval=queued.approval,
            )
            if isinstance(queued.job, ContinuationJob):
                logger.info(
                    "continuing a turn",
                    extra={"continuation": queued.job.part, "job_kind": kind.name},
                )
            elif queued.approval is not None:
                logger.info(
                    "resuming a turn that waited for an approval",
                    extra={"decision": queued.approval.decision, "job_kind": kind.name},
                )
            run_turn(deps, turn, ctx, remaining_ms)

    def give_up(self, queued: QueuedJob) -> None:
        """The job failed for the last time (it goes to the dead-letter queue): tell the chat
        once (its subject's chat and topic), if a person is waiting for it (its kind says,
        kinds.py). Never raises.

        What it is told depends on the turn's journal record, read as the turn reads it
        (`_answer_kept`): a turn that failed before its answer was sent gets
        `could_not_process` (the message waits in the dead-letter queue; send it again). A
        turn whose answer was sent and whose save failed on every attempt (recorded
        `answered`, saving.py) is not told its message failed: the person read the answer.
        It is told `answer_not_saved` instead, one short line: its session holds neither the
        message nor the answer, so the assistant will not remember the exchange, and saying
        nothing would leave the person believing it does. A turn that was saved (something
        after its save failed) is told nothing. If the record cannot be read, the chat gets
        `could_not_process`, as before records were read here. A `/hooks add` whose hook's
        secret no run sent has that hook removed, and the chat is told to add it again
        (Commands.hooks_given_up)."""
        try:
            subject = subject_of(queued, self.deps.settings.owner)
        except NoSubject:
            return  # no chat to tell: it was never run either
        if not kind_of(queued).told_when_given_up(queued):
            return
        try:
            kept = self._answer_kept(queued)
        except Exception as error:
            logger.error("could not read the failed turn's record (%s)", type(error).__name__)
            kept = None
        if kept == "saved":
            logger.warning("turn failed after its save: the chat is told nothing")
            return
        notice = "answer_not_saved" if kept == "answered" else "could_not_process"
        channel = self.deps.ports.services.channel
        try:
            text = self._hook_withdrawn(queued.inbound) or texts.load(notice)
            send_unjournaled(channel, subject.chat_id, text, subject.thread_id)
        except Exception as error:
            logger.error("could not tell the chat its message failed (%s)", type(error).__name__)

    def _hook_withdrawn(self, inbound: object) -> str | None:
        """For a `/hooks` message: the notice that the hook it made was removed, its secret
        never sent (Commands.hooks_given_up); None otherwise, or if that could not be done."""
        if not isinstance(inbound, InboundMessage) or inbound.command != "hooks":
            return None
        try:
            return self.deps.commands.hooks_given_up(inbound)
        except Exception as error:
            logger.error("could not withdraw the failed /hooks' hook (%s)", type(error).__name__)
            return None

    def _answer_kept(self, queued: QueuedJob) -> Literal["saved", "answered"] | None:
        """How far the job's turn got with its answer, from its journal record, found where
        the turn keeps it (its kind's `recorded_at`) and read as the turn's start reads it
        (turn_run.py, `TurnStarter`): "saved" (the session holds the turn, or a turn outside
        a session is done), "answered" (sent, its save failed), or None (neither, or a kind
        whose record is not known from its job)."""
        place = kind_of(queued).turn(self.deps, queued.started).recorded_at(queued)
        if place is None:
            return None
        stores = self.deps.ports.stores
        if place.in_session:
            history = stores.sessions.load(place.key, 1)
            if place.turn_id in history.recent_turns:
                return "saved"
            progress = progress_in(history, place.turn_id)
        else:
            progress = stores.journal.get(place.key, place.turn_id)
            if progress.done:
                return "saved"
        return "answered" if progress.answered else None
