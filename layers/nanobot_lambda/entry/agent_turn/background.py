"""Background tasks (the spawn tool): the task's own turn, and its announcement in its chat.

A background task runs as a durable queued job in its own queue group, with the file tools
only. When it ends, its result is queued into its chat's own group, behind whatever the user
said meanwhile, and the chat's agent tells the user about it in its own words.
"""

from __future__ import annotations

import logging

from nanobot_lambda.adapters.telegram.inbound import session_key_for
from nanobot_lambda.core import texts
from nanobot_lambda.core.context import RUNTIME_FIELD
from nanobot_lambda.core.errors import ModelError
from nanobot_lambda.core.jobs import AnnouncementJob, SubagentJob
from nanobot_lambda.entry.agent_turn.parts import TurnParts
from nanobot_lambda.entry.agent_turn.run import RemainingMillis
from nanobot_lambda.entry.agent_turn.saving import consolidate_quietly

logger = logging.getLogger(__name__)


def subagent_turn(parts: TurnParts, job: SubagentJob, remaining_ms: RemainingMillis | None) -> None:
    """A background task: run it with the file tools, then hand the result to its chat."""
    group = f"subagent:{job.subagent_id}"
    run = parts.starter.outside_session(job, f"subagent-{job.subagent_id}", group, remaining_ms)
    if run is None:
        return
    prompt = texts.render("subagent_task", label=job.label, task=job.task)
    request = parts.context.messages([], prompt, parts.runtime_block(run, job.chat_id))
    log = {"subagent_id": job.subagent_id, "chat_id": job.chat_id}
    with parts.scope(run, "subagent") as scope:
        outcome = parts.runner.run(parts.subagent, request, scope, run, log, apologise=False)
    succeeded = outcome is not None and not outcome.hit_iteration_limit and outcome.limited is None
    result = outcome.reply if outcome is not None else texts.load("model_error")
    announcement = AnnouncementJob(
        subagent_id=job.subagent_id,
        chat_id=job.chat_id,
        thread_id=job.thread_id,
        label=job.label,
        succeeded=succeeded,
        result=result,
    )
    stores, services = parts.ports.stores, parts.ports.services
    # Into the chat's own queue order, after whatever the user said meanwhile.
    services.queue.enqueue(
        announcement,
        group=session_key_for(job.chat_id, job.thread_id),
        dedup_id=f"announce-{job.subagent_id}",
    )
    stores.jobs.finish_subagent(job.chat_id, job.subagent_id)
    stores.journal.mark_done(run.journal_key, run.progress)
    logger.info("background task finished", extra={**log, "succeeded": succeeded})


def announcement_turn(
    parts: TurnParts, job: AnnouncementJob, remaining_ms: RemainingMillis | None
) -> None:
    """The chat's agent hears what a background task did and tells the user itself."""
    key = session_key_for(job.chat_id, job.thread_id)
    history, run = parts.starter.in_session(job, f"announce-{job.subagent_id}", key, remaining_ms)
    if run is None:
        return
    note = texts.render(
        "announcement",
        label=job.label,
        outcome="finished" if job.succeeded else "did not finish",
        result=job.result,
    )
    runtime = parts.runtime_block(run, job.chat_id, history=history.messages)
    request = parts.request_that_fits(
        history, lambda past: parts.context.messages(past, note, runtime)
    )
    log = {"subagent_id": job.subagent_id, "chat_id": job.chat_id}
    with parts.scope(run, "announcement") as scope:
        outcome = parts.runner.run(parts.agent, request, scope, run, log, apologise=False)
        if outcome is None:
            raise ModelError("announcement could not be told")  # SQS retries it
        if parts.deliver_reply(run, scope, outcome):
            user = {"role": "user", "content": note, RUNTIME_FIELD: runtime}
            parts.saver.save(history, user, outcome, run)
    if parts.consolidator.due(history):
        consolidate_quietly(parts.consolidator, key)
