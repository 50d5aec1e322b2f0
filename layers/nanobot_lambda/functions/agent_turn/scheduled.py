"""Turns that the schedules start: the heartbeat, and a scheduled task (the cron tool's tasks).

The heartbeat first asks the model whether any standing task is due (a small forced tool call);
only then does it run the agent, in a throwaway session, and it reports only when there is news.
A scheduled task runs in its own session `cron:<job id>`, and its report goes to its chat. A
quiet task reports only news, as the heartbeat does: it shows no progress, and its "nothing to
report" answer is saved (the next run compares with it) but not sent.
"""

from __future__ import annotations

import logging
import secrets

from nanobot_lambda.core import heartbeat, texts
from nanobot_lambda.core.agent import TurnOutcome
from nanobot_lambda.core.context import RUNTIME_FIELD
from nanobot_lambda.core.errors import ModelError
from nanobot_lambda.core.heartbeat import HEARTBEAT_GROUP, HEARTBEAT_OK
from nanobot_lambda.core.jobs import CronTaskJob, HeartbeatJob
from nanobot_lambda.core.sessions import SessionHistory
from nanobot_lambda.core.spend import SpendLimitReached
from nanobot_lambda.functions.agent_turn.queued import QueuedJob
from nanobot_lambda.functions.agent_turn.turn import JobTurn, Request
from nanobot_lambda.functions.agent_turn.turn_deps import TurnDeps
from nanobot_lambda.functions.agent_turn.turn_run import Opening, TurnRun
from nanobot_lambda.tools.context import JobContext

logger = logging.getLogger(__name__)


class HeartbeatTurn(JobTurn[HeartbeatJob]):
    """Outside any session; its record is marked done whatever the model said."""

    origin = "heartbeat"

    def open(self, ctx: JobContext) -> Opening | None:
        if not ctx.subject.scope.is_owner:
            # HEARTBEAT.md holds the owner's tasks: never run or reported in another's chat (a
            # chat remembered before scopes existed, or HEARTBEAT_CHAT_ID set to someone else).
            logger.warning("heartbeat for a chat that is not the owner's: skipped")
            return None
        job = self.job
        return Opening(
            f"heartbeat-{job.fired_at}",
            f"heartbeat:{job.chat_id}",
            in_session=False,
            group=HEARTBEAT_GROUP,
        )

    def request(
        self, ctx: JobContext, run: TurnRun, history: SessionHistory | None
    ) -> Request | None:
        """None when no standing task is due (asked of the model with a small forced tool
        call, once: a resumed turn goes on with the decision its first run made)."""
        deps = self.deps
        runtime = deps.requests.runtime_block(ctx, run)
        tasks = self.job.tasks  # the decision was made by the run that started the turn
        if not run.progress.resumed:
            try:
                due = heartbeat.due_tasks(deps.loops.heartbeat_model(ctx), self.job.tasks, runtime)
            except SpendLimitReached:
                logger.info("heartbeat skipped: a spending limit is reached")
                return None
            except ModelError as error:
                logger.error("heartbeat decision failed: %s", error)
                return None
            if due is None:
                return None
            tasks = due
        prompt = texts.render("heartbeat_turn", tasks=tasks)
        messages = deps.context.messages(ctx.workspace, [], prompt, runtime)
        return Request(messages, deps.loops.heartbeat(ctx))

    def unanswered(self, ctx: JobContext, run: TurnRun) -> None:
        logger.info("heartbeat: nothing to report")
        self.deps.ports.stores.journal.mark_done(run.journal_key, run.progress)

    def deliver(self, ctx: JobContext, run: TurnRun, outcome: TurnOutcome) -> bool:
        if heartbeat.nothing_to_report(outcome.reply):
            logger.info("heartbeat: nothing to report")
            return True
        self.deps.delivery.deliver(ctx, run, outcome)
        return True  # marked done even when the chat blocked the bot: nobody to tell


class CronTaskTurn(JobTurn[CronTaskJob]):
    """In its own session `cron:<job id>`; its run is recorded on the task (`record_run`)."""

    origin = "cron"

    @property
    def quiet(self) -> bool:
        return self.job.quiet

    def __init__(self, deps: TurnDeps, job: CronTaskJob) -> None:
        super().__init__(deps, job)
        self.log = {"job_id": job.job_id, "chat_id": job.chat_id}
        self.status = "done"  # recorded on the task when its turn is through

    def open(self, ctx: JobContext) -> Opening:
        # One firing, one turn (older queued jobs carry no firing time: a fresh id each run).
        return self._opening(self.job.fired_at or secrets.token_hex(6))

    def recorded_at(self, queued: QueuedJob) -> Opening | None:
        # Without a firing time, each run had an id of its own: no record to find.
        return self._opening(self.job.fired_at) if self.job.fired_at else None

    def _opening(self, firing: str) -> Opening:
        return Opening(f"cron-{self.job.job_id}-{firing}", f"cron:{self.job.job_id}")

    def request(self, ctx: JobContext, run: TurnRun, history: SessionHistory | None) -> Request:
        assert history is not None
        deps, prompt = self.deps, cron_task_prompt(self.job)
        runtime = deps.requests.runtime_block(ctx, run, history=history.messages)
        messages = deps.requests.that_fits(
            ctx, history, lambda past: deps.context.messages(ctx.workspace, past, prompt, runtime)
        )
        saved = {"role": "user", "content": prompt, RUNTIME_FIELD: runtime}
        return Request(messages, deps.loops.chat(ctx), saved)

    def unanswered(self, ctx: JobContext, run: TurnRun) -> None:
        self._record_run("failed: model unavailable")

    def deliver(self, ctx: JobContext, run: TurnRun, outcome: TurnOutcome) -> bool:
        # A quiet task with nothing to report sends nothing, but its turn is saved all the same
        # (the next run compares with it; the save closes its journal record, so a retry of
        # the turn is skipped).
        if self.job.quiet and heartbeat.nothing_to_report(outcome.reply):
            logger.info("quiet task: nothing to report", extra=self.log)
            self.status = "done: nothing to report"
            return True
        return self.deps.delivery.deliver(ctx, run, outcome)

    def finished(self, ctx: JobContext, run: TurnRun, outcome: TurnOutcome) -> None:
        self._record_run(self.status)

    def _record_run(self, status: str) -> None:
        jobs, job = self.deps.ports.stores.jobs, self.job
        record = jobs.get(job.chat_id, job.job_id)
        if record is not None:
            at = self.deps.clock().isoformat(timespec="seconds")
            jobs.record_run(record, at=at, status=status)


def cron_task_prompt(job: CronTaskJob) -> str:
    """The task as the model gets it. A quiet task's prompt asks for the heartbeat's marker
    when nothing changed and nothing needs attention since the earlier runs."""
    if job.quiet:
        return texts.render(
            "cron_task_quiet", name=job.name, message=job.message, marker=HEARTBEAT_OK
        )
    return texts.render("cron_task", name=job.name, message=job.message)
