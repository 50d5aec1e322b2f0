"""The turn queue on SQS FIFO: `MessageGroupId` = the job's group (a session key), and
`MessageDeduplicationId` drops a job sent twice within five minutes."""

from __future__ import annotations

from typing import TYPE_CHECKING

from nanobot_lambda.adapters.aws.errors import aws_errors
from nanobot_lambda.core.jobs import AnyJob

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient


class SqsTurnQueue:
    def __init__(self, queue_url: str, sqs: SQSClient) -> None:
        self._queue_url = queue_url
        self._sqs = sqs

    @aws_errors
    def enqueue(self, job: AnyJob, group: str, dedup_id: str) -> str:
        response = self._sqs.send_message(
            QueueUrl=self._queue_url,
            MessageBody=job.model_dump_json(),
            MessageGroupId=group,
            MessageDeduplicationId=dedup_id,
        )
        return response["MessageId"]

    @aws_errors
    def retry_after(self, receipt_handle: str, seconds: int) -> None:
        """Make a received job that failed visible again in `seconds`."""
        self._sqs.change_message_visibility(
            QueueUrl=self._queue_url, ReceiptHandle=receipt_handle, VisibilityTimeout=seconds
        )
