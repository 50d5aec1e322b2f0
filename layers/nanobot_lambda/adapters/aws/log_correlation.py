"""Log correlation: while agent_turn processes a queued job, the job's ids (never its text) are
on every record its logger writes, so one job's records can be found together."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from aws_lambda_powertools import Logger

from nanobot_lambda.adapters.telegram.subjects import subject_of
from nanobot_lambda.core.jobs import AnyJob, ContinuationJob, TelegramUpdateJob, parse_job
from nanobot_lambda.core.subjects import NoSubject

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

# Keys agent_turn adds to every record logged while it processes a queued job.
CORRELATION_KEYS = ("turn_id", "job_kind", "chat_id", "update_id", "job_id", "subagent_id")


def correlation_ids(job: AnyJob, turn_id: str) -> dict[str, object]:
    """The ids that tie together the log records of one job (ids only, never text).

    `turn_id` is the SQS message id: the same for every retry of the job. A continuation
    (`job_kind` continuation) carries the ids of the job it continues.
    """
    started = job.job if isinstance(job, ContinuationJob) else job
    keys: dict[str, object] = {
        "turn_id": turn_id,
        "job_kind": job.kind,
        "chat_id": _chat_of(job),
        "update_id": (
            started.update.get("update_id") if isinstance(started, TelegramUpdateJob) else None
        ),
        "job_id": getattr(started, "job_id", None),
        "subagent_id": getattr(started, "subagent_id", None),
    }
    return {key: value for key, value in keys.items() if value is not None}


def _chat_of(job: AnyJob) -> int | None:
    """The job's subject's chat (the scope does not matter here: no owner is needed)."""
    try:
        return subject_of(job, owner=None).chat_id
    except NoSubject:
        return None


@contextmanager
def correlated(logger: Logger, record: SQSRecord) -> Iterator[None]:
    """While a queued job is processed, its ids are on every record the logger writes."""
    try:
        keys = correlation_ids(parse_job(record.body), turn_id=record.message_id)
    except ValueError:  # not a job: functions/agent_turn/sqs_records.py reports it
        keys = {"turn_id": record.message_id}
    logger.append_keys(**keys)
    try:
        yield
    finally:
        logger.remove_keys(list(keys))
