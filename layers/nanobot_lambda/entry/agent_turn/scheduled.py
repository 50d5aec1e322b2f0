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
from nanobot_lambda.core.context import RUNTIME_FIELD
from nanobot_lambda.core.errors import ModelError
from nanobot_lambda.core.heartbeat import HEARTBEAT_GROUP, HEARTBEAT_OK
from nanobot_lambda.core.jobs import CronTaskJob, HeartbeatJob
from nanobot_lambda.core.spend import SpendLimitReached
from nanobot_lambda.entry.agent_turn.parts import TurnParts
from nanobot_lambda.entry.agent_turn.run import RemainingMillis
from nanobot_lambda.entry.agent_turn.saving import consolidate_quietly

logger = logging.getLogger(__name__)


def heartbeat_turn(
    parts: TurnParts, job: HeartbeatJob, remaining_ms: RemainingMillis | None
) -> None:
    if not parts.subject.scope.is_owner:
        # HEARTBEAT.md holds the owner's tasks: never run or reported in another's chat (a
        # chat remembered before scopes existed, or HEARTBEAT_CHAT_ID set to someone else).
        logger.warning("heartbeat for a chat that is not the owner's: skipped")
        return
    run = parts.starter.outside_session(
        job,
        f"heartbeat-{job.fired_at}",
        f"heartbeat:{job.chat_id}",
        remaining_ms,
        group=HEARTBEAT_GROUP,
    )
    if run is None:
        return
    runtime = parts.runtime_block(run, job.chat_id)
    if not run.progress.resumed:
        try:
            tasks = heartbeat.due_tasks(parts.heartbeat_model, job.tasks, runtime)
        except SpendLimitReached:
            logger.info("heartbeat skipped: a spending limit is reached")
            return
        except ModelError as error:
            logger.error("heartbeat decision failed: %s", error)
            return
        if tasks is None:
            return
    else:
        tasks = job.tasks  # the decision was made by the run that started the turn
    request = parts.context.messages([], texts.render("heartbeat_turn", tasks=tasks), runtime)
    with parts.scope(run, "heartbeat") as scope:
        outcome = parts.runner.run(parts.heartbeat_agent, request, scope, run, {}, apologise=False)
        if outcome is None or heartbeat.nothing_to_report(outcome.reply):
            logger.info("heartbeat: nothing to report")
        else:
            parts.deliver_reply(run, scope, outcome)
    parts.ports.stores.journal.mark_done(run.journal_key, run.progress)


def cron_task_turn(
    parts: TurnParts, job: CronTaskJob, remaining_ms: RemainingMillis | None
) -> None:
    key = f"cron:{job.job_id}"
    # One firing, one turn (older queued jobs carry no firing time: a fresh id each run).
    firing = job.fired_at or secrets.token_hex(6)
    history, run = parts.starter.in_session(job, f"cron-{job.job_id}-{firing}", key, remaining_ms)
    if run is None:
        return
    prompt = cron_task_prompt(job)
    runtime = parts.runtime_block(run, job.chat_id, history=history.messages)
    request = parts.request_that_fits(
        history, lambda past: parts.context.messages(past, prompt, runtime)
    )
    log = {"job_id": job.job_id, "chat_id": job.chat_id}
    with parts.scope(run, "cron", quiet=job.quiet) as scope:
        outcome = parts.runner.run(parts.agent, request, scope, run, log, apologise=False)
        status = "failed: model unavailable" if outcome is None else "done"
        # A quiet task with nothing to report sends nothing, but its turn is saved all the same
        # (the next run compares with it; the save closes its journal record, so a retry of
        # the turn is skipped).
        silent = outcome is not None and job.quiet and heartbeat.nothing_to_report(outcome.reply)
        if silent:
            logger.info("quiet task: nothing to report", extra=log)
            status = "done: nothing to report"
        if outcome is not None and (silent or parts.deliver_reply(run, scope, outcome)):
            parts.saver.save(
                history, {"role": "user", "content": prompt, RUNTIME_FIELD: runtime}, outcome, run
            )
    if parts.consolidator.due(history):
        consolidate_quietly(parts.consolidator, key)
    jobs = parts.ports.stores.jobs
    record = jobs.get(job.chat_id, job.job_id)
    if record is not None:
        jobs.record_run(record, at=parts.clock().isoformat(timespec="seconds"), status=status)


def cron_task_prompt(job: CronTaskJob) -> str:
    """The task as the model gets it. A quiet task's prompt asks for the heartbeat's marker
    when nothing changed and nothing needs attention since the earlier runs."""
    if job.quiet:
        return texts.render(
            "cron_task_quiet", name=job.name, message=job.message, marker=HEARTBEAT_OK
        )
    return texts.render("cron_task", name=job.name, message=job.message)
