"""Turns that the schedules start: the heartbeat, and a scheduled task (the cron tool's tasks).

The heartbeat first asks the model whether any standing task is due (a small forced tool call);
only then does it run the agent, in a throwaway session, and it reports only when there is news.
A scheduled task runs in its own session `cron:<job id>`, and its report goes to its chat.
"""

from __future__ import annotations

import logging
import secrets

from nanobot_lambda.core import heartbeat, texts
from nanobot_lambda.core.errors import ModelError
from nanobot_lambda.core.heartbeat import HEARTBEAT_GROUP
from nanobot_lambda.core.jobs import CronTaskJob, HeartbeatJob
from nanobot_lambda.entry.agent_turn.parts import TurnParts
from nanobot_lambda.entry.agent_turn.run import RemainingMillis

logger = logging.getLogger(__name__)


def heartbeat_turn(
    parts: TurnParts, job: HeartbeatJob, remaining_ms: RemainingMillis | None
) -> None:
    run = parts.starter.outside_session(
        job,
        f"heartbeat-{job.fired_at}",
        f"heartbeat:{job.chat_id}",
        remaining_ms,
        group=HEARTBEAT_GROUP,
    )
    if run is None:
        return
    runtime = parts.runtime(job.chat_id)
    if not run.progress.resumed:
        try:
            tasks = heartbeat.due_tasks(parts.model, job.tasks, runtime)
        except ModelError as error:
            logger.error("heartbeat decision failed: %s", error)
            return
        if tasks is None:
            return
    else:
        tasks = job.tasks  # the decision was made by the run that started the turn
    request = parts.context.messages([], texts.render("heartbeat_turn", tasks=tasks), runtime)
    with parts.scope(run, job.chat_id, None, "heartbeat") as scope:
        outcome = parts.runner.run(parts.agent, request, scope, run, {}, apologise=False)
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
    prompt = texts.render("cron_task", name=job.name, message=job.message)
    request = parts.context.messages(history.messages, prompt, parts.runtime(job.chat_id))
    log = {"job_id": job.job_id, "chat_id": job.chat_id}
    with parts.scope(run, job.chat_id, job.thread_id, "cron") as scope:
        outcome = parts.runner.run(parts.agent, request, scope, run, log, apologise=False)
        status = "failed: model unavailable" if outcome is None else "done"
        if outcome is not None and parts.deliver_reply(run, scope, outcome):
            parts.saver.save(history, {"role": "user", "content": prompt}, outcome, run)
    jobs = parts.ports.stores.jobs
    record = jobs.get(job.chat_id, job.job_id)
    if record is not None:
        jobs.record_run(record, at=parts.clock().isoformat(timespec="seconds"), status=status)
