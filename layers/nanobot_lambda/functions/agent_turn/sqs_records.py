"""agent_turn's side of the queue: one SQS record is one job, and what a failure does to it.

A record whose turn raises is reported to SQS as a batch item failure, which retries it. Before
that:
- it is made visible again after a short backoff (`RETRY_BACKOFF_SECONDS`, doubled per attempt)
  instead of the queue's 30-minute visibility timeout, so a failing message holds up its chat
  (FIFO order) for seconds rather than half an hour;
- on its last attempt (`TURN_MAX_RECEIVE_COUNT`, the queue's maxReceiveCount) the chat is told
  once that the message could not be processed (or, when its answer was sent and only its save
  failed, that the exchange may be missing from memory: dispatch.py, `give_up`). SQS then
  moves it to the dead-letter queue,
  where `nanobot-lambda dlq list|replay` shows and re-drives it. Nothing is dropped silently.

A record whose invocation dies (Lambda's time limit, out of memory, a lost container) raises
nothing: SQS offers it again when its visibility times out, and the queue's is 6 times the
function's time limit (AWS's advice for an event source: 30 minutes). So as a record starts,
its visibility is set to the invocation's time left and a margin — the function cannot outlive
that — and a record whose run died is offered again minutes later, not half an hour (its turn
resumes from its journal). The call runs beside the turn's start, costing it no time.

A job with no chat, person and scope to run for (core/subjects.py: `NoSubject`) is refused like
a message that is not a job: nothing of it runs, no chat is told, and it reaches the dead-letter
queue.

Each record is parsed here, once (queued.py); while it is processed, the ids that name its job
(kinds.py, `job_ids`) are on every log record (`correlate`: adapters/aws/log_correlation.py).
"""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING, Protocol

from nanobot_lambda.core.ports import RetryDelay
from nanobot_lambda.core.subjects import NoSubject
from nanobot_lambda.functions.agent_turn.kinds import job_ids
from nanobot_lambda.functions.agent_turn.queued import QueuedJob, read_job

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
    from aws_lambda_powertools.utilities.typing import LambdaContext

logger = logging.getLogger(__name__)

MAX_BACKOFF_SECONDS = 900
# Seconds past the invocation's end before a record whose run died is offered again.
AFTER_DEATH_SECONDS = 10


LogIds = Callable[[dict[str, object]], AbstractContextManager[None]]
"""While open, these ids are on every log record (adapters/aws/log_correlation.py)."""


class JobRunner(Protocol):
    def process(self, queued: QueuedJob, remaining_ms: Callable[[], int] | None = None) -> None: ...

    def give_up(self, queued: QueuedJob) -> None: ...


def _uncorrelated(ids: dict[str, object]) -> AbstractContextManager[None]:
    return nullcontext()


class RecordRunner:
    def __init__(
        self,
        turns: JobRunner,
        queue: RetryDelay,
        *,
        max_receive_count: int,
        backoff_seconds: int,
        on_last_failure: Callable[[], None] = lambda: None,
        correlate: LogIds = _uncorrelated,
    ) -> None:
        self._turns = turns
        self._correlate = correlate
        self._queue = queue
        self._max_receive_count = max_receive_count
        self._backoff_seconds = backoff_seconds
        self._on_last_failure = on_last_failure

    def run(self, record: SQSRecord, lambda_context: LambdaContext | None = None) -> None:
        """Powertools' record handler (it passes `lambda_context` by that name)."""
        receives = int(record.attributes.approximate_receive_count or 1)
        log = {"message_id": record.message_id, "receive_count": receives}
        last_attempt = receives >= self._max_receive_count
        # The SQS message id: the same for every retry of the job.
        turn_id: dict[str, object] = {"turn_id": record.message_id}
        try:
            queued = read_job(record.body)
        except ValueError:
            # Not a job (pydantic's ValidationError is a ValueError): retrying cannot help,
            # but the dead-letter queue keeps it for a person to look at.
            with self._correlate(turn_id):
                logger.error(
                    "queue message is not a job; it will reach the dead-letter queue", extra=log
                )
                self._after_failure(record, receives, last_attempt)
            raise
        with self._correlate({**turn_id, **job_ids(queued)}):
            self._run(record, queued, receives, last_attempt, lambda_context)

    def _run(
        self,
        record: SQSRecord,
        queued: QueuedJob,
        receives: int,
        last_attempt: bool,
        lambda_context: LambdaContext | None,
    ) -> None:
        log = {"message_id": record.message_id, "receive_count": receives}
        remaining = lambda_context.get_remaining_time_in_millis if lambda_context else None
        hiding = self._hide_until_past(record.receipt_handle, remaining)
        try:
            self._turns.process(queued, remaining)
        except NoSubject as refused:
            # Never run in another's scope for want of a chat: retrying cannot help either.
            _joined(hiding)
            logger.error("job refused: %s; it will reach the dead-letter queue", refused, extra=log)
            self._after_failure(record, receives, last_attempt)
            raise
        except Exception:
            _joined(hiding)
            if last_attempt:
                logger.exception(
                    "turn failed for the last time: to the dead-letter queue", extra=log
                )
                self._turns.give_up(queued)
            else:
                logger.exception("turn failed; SQS will retry it", extra=log)
            self._after_failure(record, receives, last_attempt)
            raise
        _joined(hiding)

    def _hide_until_past(
        self, receipt_handle: str, remaining_ms: Callable[[], int] | None
    ) -> threading.Thread | None:
        """Make the record visible again only after the invocation can have ended (started
        beside the turn; join it before the record is done). Without the invocation's clock
        there is nothing to do (None)."""
        if remaining_ms is None:
            return None
        seconds = math.ceil(remaining_ms() / 1000)
        hiding = threading.Thread(
            target=self._hide, args=(receipt_handle, seconds), name="visibility"
        )
        hiding.start()
        return hiding

    def _hide(self, receipt_handle: str, seconds: int) -> None:
        try:
            self._queue.retry_after(receipt_handle, seconds + AFTER_DEATH_SECONDS)
        except Exception as error:
            # The queue's own visibility timeout then applies: later, not lost.
            logger.warning("could not shorten the record's visibility (%s)", type(error).__name__)

    def _after_failure(self, record: SQSRecord, receives: int, last_attempt: bool) -> None:
        if last_attempt:
            self._on_last_failure()
            return
        delay = min(self._backoff_seconds * 2 ** (receives - 1), MAX_BACKOFF_SECONDS)
        try:
            self._queue.retry_after(record.receipt_handle, delay)
        except Exception as error:
            # The retry then waits for the queue's visibility timeout: later, not lost.
            logger.warning("could not shorten the retry delay (%s)", type(error).__name__)


def _joined(hiding: threading.Thread | None) -> None:
    if hiding is not None:
        hiding.join()
