"""Background tasks (the spawn tool): the task's own turn, and its announcement in its chat.

A background task runs as a durable queued job in its own queue group, with the file tools
only. When it ends, its result is queued into its chat's own group, behind whatever the user
said meanwhile, and the chat's agent tells the user about it in its own words.
"""

from __future__ import annotations

import logging

from nanobot_lambda.adapters.telegram.places import session_key_for
from nanobot_lambda.core import texts
from nanobot_lambda.core.agent import TurnOutcome
from nanobot_lambda.core.context import RUNTIME_FIELD
from nanobot_lambda.core.errors import ModelError
from nanobot_lambda.core.jobs import AnnouncementJob, SubagentJob
from nanobot_lambda.core.sessions import SessionHistory
from nanobot_lambda.functions.agent_turn.turn import JobTurn, Request
from nanobot_lambda.functions.agent_turn.turn_deps import TurnDeps
from nanobot_lambda.functions.agent_turn.turn_run import Opening, TurnRun
from nanobot_lambda.tools.context import JobContext

logger = logging.getLogger(__name__)


class SubagentTurn(JobTurn[SubagentJob]):
    """A background task: run it with the file tools, then hand the result to its chat (its
    "delivery" is the announcement, queued). Outside any session."""

    origin = "subagent"

    def __init__(self, deps: TurnDeps, job: SubagentJob) -> None:
        super().__init__(deps, job)
        self.log = {"subagent_id": job.subagent_id, "chat_id": job.chat_id}

    def open(self, ctx: JobContext) -> Opening:
        group = f"subagent:{self.job.subagent_id}"
        return Opening(f"subagent-{self.job.subagent_id}", group, in_session=False)

    def request(self, ctx: JobContext, run: TurnRun, history: SessionHistory | None) -> Request:
        deps, job = self.deps, self.job
        prompt = texts.render("subagent_task", label=job.label, task=job.task)
        runtime = deps.requests.runtime_block(ctx, run)
        messages = deps.context.messages(ctx.workspace, [], prompt, runtime)
        return Request(messages, deps.loops.subagent(ctx))

    def unanswered(self, ctx: JobContext, run: TurnRun) -> None:
        self._announce(None)
        self.deps.ports.stores.journal.mark_done(run.journal_key, run.progress)

    def deliver(self, ctx: JobContext, run: TurnRun, outcome: TurnOutcome) -> bool:
        self._announce(outcome)
        return True

    def _announce(self, outcome: TurnOutcome | None) -> None:
        """The task's result, queued for its chat: into the chat's own queue order, after
        whatever the user said meanwhile."""
        job, deps = self.job, self.deps
        succeeded = (
            outcome is not None and not outcome.hit_iteration_limit and outcome.limited is None
        )
        result = outcome.reply if outcome is not None else texts.load("model_error")
        announcement = AnnouncementJob(
            subagent_id=job.subagent_id,
            chat_id=job.chat_id,
            thread_id=job.thread_id,
            label=job.label,
            succeeded=succeeded,
            result=result,
        )
        deps.ports.services.queue.enqueue(
            announcement,
            group=session_key_for(job.chat_id, job.thread_id),
            dedup_id=f"announce-{job.subagent_id}",
        )
        deps.ports.stores.jobs.finish_subagent(job.chat_id, job.subagent_id)
        logger.info("background task finished", extra={**self.log, "succeeded": succeeded})


class AnnouncementTurn(JobTurn[AnnouncementJob]):
    """The chat's agent hears what a background task did and tells the user itself, in the
    chat's session."""

    origin = "announcement"

    def __init__(self, deps: TurnDeps, job: AnnouncementJob) -> None:
        super().__init__(deps, job)
        self.log = {"subagent_id": job.subagent_id, "chat_id": job.chat_id}

    def open(self, ctx: JobContext) -> Opening:
        job = self.job
        return Opening(f"announce-{job.subagent_id}", session_key_for(job.chat_id, job.thread_id))

    def request(self, ctx: JobContext, run: TurnRun, history: SessionHistory | None) -> Request:
        assert history is not None
        deps, job = self.deps, self.job
        note = texts.render(
            "announcement",
            label=job.label,
            outcome="finished" if job.succeeded else "did not finish",
            result=job.result,
        )
        runtime = deps.requests.runtime_block(ctx, run, history=history.messages)
        messages = deps.requests.that_fits(
            ctx, history, lambda past: deps.context.messages(ctx.workspace, past, note, runtime)
        )
        saved = {"role": "user", "content": note, RUNTIME_FIELD: runtime}
        return Request(messages, deps.loops.chat(ctx), saved)

    def unanswered(self, ctx: JobContext, run: TurnRun) -> None:
        raise ModelError("announcement could not be told")  # SQS retries it
