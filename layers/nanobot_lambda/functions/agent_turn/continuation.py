"""A turn out of Lambda time: record where it is, tell the user once, and queue its
continuation in the same queue group, so the next invocation resumes it. (How often a turn may
continue, and what happens past that, is the runner's: agent_runner.py.) `TurnSuspended` ends
the run here: turn.py catches it, and the invocation goes on to its next record."""

from __future__ import annotations

import logging
from typing import Any

from nanobot_lambda.core import texts
from nanobot_lambda.core.jobs import ContinuationJob
from nanobot_lambda.core.ports import TurnJournal, TurnQueue
from nanobot_lambda.functions.agent_turn.turn_run import TurnRun
from nanobot_lambda.tools.context import JobContext

logger = logging.getLogger(__name__)


class TurnSuspended(Exception):
    """The turn was recorded and continues in another invocation: nothing more to do here."""


class Continuation:
    def __init__(self, journal: TurnJournal, queue: TurnQueue) -> None:
        self._journal = journal
        self._queue = queue

    def suspend(self, ctx: JobContext, run: TurnRun, log: dict[str, Any]) -> None:
        """Record the turn, tell the user, queue its continuation. Always raises
        TurnSuspended: the turn is not finished in this invocation."""
        progress = run.progress
        progress.continuations += 1
        if ctx.origin == "user" and progress.continuations == 1:
            run.outbox.send(ctx.chat_id, texts.load("still_working"), ctx.thread_id)
        progress.sends = run.outbox.count
        self._journal.checkpoint(run.journal_key, progress)
        # The job envelope calls the n-th invocation of a turn its `part` (kept: queued
        # continuations must still process); here it is the continuation's number.
        number = progress.continuations + 1
        self._queue.enqueue(
            ContinuationJob(job=run.job, part=number),
            group=run.group,
            dedup_id=f"{progress.turn_id}-part{number}"[-128:],
        )
        logger.info("turn continues in another invocation", extra={**log, "continuation": number})
        raise TurnSuspended
