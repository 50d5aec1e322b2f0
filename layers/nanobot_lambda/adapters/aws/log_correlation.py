"""Log correlation: while agent_turn processes a queued job, the job's ids (never its text) are
on every record its logger writes, so one job's records can be found together. Which ids name a
job is its kind's to say (functions/agent_turn/kinds.py, from the record parsed once)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from aws_lambda_powertools import Logger

# Keys agent_turn adds to every record logged while it processes a queued job: the SQS message
# id (`turn_id`, the same for every retry of the job), the job's kind, and the ids its kind names
# it by.
CORRELATION_KEYS = (
    "turn_id",
    "job_kind",
    "chat_id",
    "update_id",
    "job_id",
    "subagent_id",
    "hook",
    "delivery_id",
)


@contextmanager
def correlated(logger: Logger, ids: Mapping[str, object]) -> Iterator[None]:
    """While open, `ids` are on every record the logger writes."""
    keys = {key: value for key, value in ids.items() if value is not None}
    logger.append_keys(**keys)
    try:
        yield
    finally:
        logger.remove_keys(list(keys))
