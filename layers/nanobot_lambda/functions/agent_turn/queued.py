"""A queue record, parsed once: the job, and for a Telegram update the update validated and what
it asks the bot to answer.

sqs_records.py parses each record here, once; log correlation, the job's subject, its turn
(messages.py reads its message from the job's context) and the notice of a job given up all take
what this parse made, and nothing validates the update again.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import ValidationError

from nanobot_lambda.adapters.telegram.inbound import InboundMessage, to_inbound
from nanobot_lambda.adapters.telegram.models import Update
from nanobot_lambda.adapters.telegram.places import Ignored
from nanobot_lambda.core.jobs import (
    AnyJob,
    ApprovalJob,
    ContinuationJob,
    StartJob,
    TelegramUpdateJob,
    parse_job,
)


@dataclass(frozen=True)
class QueuedJob:
    """A job as it came off the queue (a continuation with the job it continues)."""

    job: AnyJob
    # A Telegram update's: the update, validated once (None for another kind, or a queued
    # update that is not one), and the message it asks to answer or why there is none.
    update: Update | None = None
    inbound: InboundMessage | Ignored | None = None

    @classmethod
    def of(cls, job: AnyJob) -> QueuedJob:
        """`job` with its update validated and read, if it carries one."""
        started = job.job if isinstance(job, ContinuationJob | ApprovalJob) else job
        if not isinstance(started, TelegramUpdateJob):
            return cls(job)
        try:
            update = Update.model_validate(started.update)
        except ValidationError:
            return cls(job)  # no subject: refused (core/subjects.py)
        return cls(job, update, to_inbound(update))

    @property
    def started(self) -> StartJob:
        """The job whose turn runs: a continuation's is the job it continues."""
        return self.job.job if isinstance(self.job, ContinuationJob | ApprovalJob) else self.job

    @property
    def continued(self) -> bool:
        """A turn's continuation in another invocation (counted as a turn by its first part):
        after it ran out of time, or once a call it waited on was decided."""
        return isinstance(self.job, ContinuationJob | ApprovalJob)

    @property
    def approval(self) -> ApprovalJob | None:
        """The decision that resumes a turn waiting for a person (core/approvals.py)."""
        return self.job if isinstance(self.job, ApprovalJob) else None


def read_job(body: str) -> QueuedJob:
    """A queue message's body as a job; raises pydantic's ValidationError (a ValueError) for
    anything else."""
    return QueuedJob.of(parse_job(body))
