"""The turn queue's dead-letter queue: turns that failed every attempt, looked at and sent back.

Listing does not consume: messages are received with a short visibility timeout and released
(made visible again) right after. On a FIFO queue a message group stays locked while any of
its messages is in flight, so one listing sees at most the first ten messages of each chat;
the count of the rest is given. A message's text is never shown: only what kind of job it is,
its ids and its size.

Replaying sends a message back to the turn queue with the same message group (the chat keeps
its order) and a deduplication id of its own (`replay-<message id>`: replaying the same
message twice within SQS's five minutes sends it once), and deletes it from the dead-letter
queue only once the send succeeded.

The operator's `nanobot-lambda dlq` and the console's Activity (functions/console/) both use it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_sqs.type_defs import MessageTypeDef

    from nanobot_lambda.core.jobs import AnyJob

LIST_VISIBILITY_SECONDS = 30  # long enough to page through, released right after
RECEIVE_BATCH = 10


@dataclass(frozen=True)
class DeadLetter:
    message_id: str
    receipt_handle: str
    group: str
    body: str
    sent_at: datetime | None
    receive_count: int

    @property
    def size(self) -> int:
        return len(self.body.encode("utf-8"))

    def describe_job(self) -> str:
        """The job's kind and ids, never its text (a user's message, a task's prompt)."""
        from nanobot_lambda.core.jobs import parse_job  # on first use: the console's start

        try:
            return describe(parse_job(self.body))
        except ValidationError:
            return "unreadable job"


def describe(job: AnyJob) -> str:
    # Imported on first use: the console lists dead letters seldom, and starts without them.
    from nanobot_lambda.adapters.telegram.models import Update
    from nanobot_lambda.core.jobs import ApprovalJob, ContinuationJob, TelegramUpdateJob

    if isinstance(job, ContinuationJob):
        return f"{describe(job.job)} (continuation, part {job.part})"
    if isinstance(job, ApprovalJob):
        return f"{describe(job.job)} (approval {job.approval_id}: {job.decision})"
    if isinstance(job, TelegramUpdateJob):
        try:
            update = Update.model_validate(job.update)
        except ValidationError:
            return "telegram_update (unreadable)"
        message = update.message or update.edited_message
        chat = f" chat {message.chat.id}" if message else ""
        return f"telegram_update {update.kind} update_id {update.update_id}{chat}"
    ids = [f"chat {job.chat_id}"]
    ids += [f"{name} {getattr(job, name)}" for name in job.ids]
    return f"{job.kind} {' '.join(ids)}"


def _dead_letter(message: MessageTypeDef) -> DeadLetter:
    attributes = message.get("Attributes", {})
    sent = attributes.get("SentTimestamp")
    return DeadLetter(
        message_id=message["MessageId"],
        receipt_handle=message["ReceiptHandle"],
        group=attributes.get("MessageGroupId", ""),
        body=message["Body"],
        sent_at=datetime.fromtimestamp(int(sent) / 1000, UTC) if sent else None,
        receive_count=int(attributes.get("ApproximateReceiveCount", "0")),
    )


class DeadLetterQueue:
    def __init__(self, dlq_url: str, sqs: SQSClient) -> None:
        self._url = dlq_url
        self._sqs = sqs

    def approximate_count(self) -> int:
        attributes = self._sqs.get_queue_attributes(
            QueueUrl=self._url,
            AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
        )["Attributes"]
        return sum(int(value) for value in attributes.values())

    def receive_all(self, visibility: int = LIST_VISIBILITY_SECONDS) -> list[DeadLetter]:
        """Every message that can be received now, held invisible for `visibility` seconds."""
        found: dict[str, DeadLetter] = {}
        while True:
            response = self._sqs.receive_message(
                QueueUrl=self._url,
                MaxNumberOfMessages=RECEIVE_BATCH,
                VisibilityTimeout=visibility,
                WaitTimeSeconds=0,
                MessageSystemAttributeNames=["All"],
            )
            batch = [_dead_letter(message) for message in response.get("Messages", [])]
            fresh = [letter for letter in batch if letter.message_id not in found]
            if not fresh:
                return list(found.values())
            found.update((letter.message_id, letter) for letter in fresh)

    def release(self, letters: Iterable[DeadLetter]) -> None:
        """Make received messages visible again (nothing consumed)."""
        for letter in letters:
            self._sqs.change_message_visibility(
                QueueUrl=self._url, ReceiptHandle=letter.receipt_handle, VisibilityTimeout=0
            )

    def peek(self) -> list[DeadLetter]:
        letters = self.receive_all()
        self.release(letters)
        return letters

    def replay(
        self,
        turn_queue_url: str,
        message_ids: set[str] | None,
        *,
        on_replayed: Callable[[DeadLetter], None] = lambda letter: None,
    ) -> tuple[list[DeadLetter], set[str]]:
        """Send the chosen messages (all with None) back to the turn queue, in order per chat.

        Returns (replayed, ids not found). A failed send stops that chat's later messages
        (they would overtake it) and is raised after the others are done and released.
        """
        letters = self.receive_all(visibility=120)
        chosen = [
            letter for letter in letters if message_ids is None or letter.message_id in message_ids
        ]
        replayed: list[DeadLetter] = []
        failed_groups: dict[str, Exception] = {}
        try:
            for letter in chosen:
                if letter.group in failed_groups:
                    continue
                try:
                    self._send_back(turn_queue_url, letter)
                except Exception as error:
                    failed_groups[letter.group] = error
                    continue
                self._sqs.delete_message(QueueUrl=self._url, ReceiptHandle=letter.receipt_handle)
                replayed.append(letter)
                on_replayed(letter)
        finally:
            done = {letter.message_id for letter in replayed}
            self.release(letter for letter in letters if letter.message_id not in done)
        if failed_groups:
            raise next(iter(failed_groups.values()))
        missing = (message_ids or set()) - {letter.message_id for letter in letters}
        return replayed, missing

    def _send_back(self, turn_queue_url: str, letter: DeadLetter) -> None:
        arguments: dict[str, Any] = {
            "QueueUrl": turn_queue_url,
            "MessageBody": letter.body,
            "MessageDeduplicationId": f"replay-{letter.message_id}",
        }
        if letter.group:
            arguments["MessageGroupId"] = letter.group
        self._sqs.send_message(**arguments)
