"""What Lambda does around the handlers, done locally: load them, give them a context, and
feed them the SQS queue the way the event source mapping does (partial batch responses)."""

from __future__ import annotations

import importlib.util
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from nanobot_lambda.functions import init_phase

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_sqs.type_defs import MessageTypeDef

Handler = Callable[[dict[str, Any], Any], Any]


@dataclass
class LocalLambdaContext:
    """The attributes of Lambda's context object that handlers and Powertools read."""

    function_name: str
    timeout_seconds: float = 300
    memory_limit_in_mb: int = 1024
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    region: str = "us-east-1"
    _deadline: float = field(init=False)

    def __post_init__(self) -> None:
        self._deadline = time.monotonic() + self.timeout_seconds

    @property
    def function_version(self) -> str:
        return "$LATEST"

    @property
    def invoked_function_arn(self) -> str:
        return f"arn:aws:lambda:{self.region}:123456789012:function:{self.function_name}"

    @property
    def log_group_name(self) -> str:
        return f"/aws/lambda/{self.function_name}"

    @property
    def log_stream_name(self) -> str:
        return "local"

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._deadline - time.monotonic()) * 1000))


def load_handler_module(code_dir: Path, module_name: str) -> ModuleType:
    """Import `<code_dir>/app.py` as a fresh module (each function's file is named app.py)."""
    spec = importlib.util.spec_from_file_location(module_name, code_dir / "app.py")
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load a handler from {code_dir}")
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    finally:
        init_phase.ended()  # a failed init leaves this process its garbage collector
    return module


def sqs_event(messages: list[MessageTypeDef], queue_arn: str, region: str) -> dict[str, Any]:
    """The event Lambda's SQS event source mapping delivers for these received messages."""
    return {
        "Records": [
            {
                "messageId": message["MessageId"],
                "receiptHandle": message["ReceiptHandle"],
                "body": message["Body"],
                "attributes": dict(message.get("Attributes", {})),
                "messageAttributes": dict(message.get("MessageAttributes", {})),
                "md5OfBody": message["MD5OfBody"],
                "eventSource": "aws:sqs",
                "eventSourceARN": queue_arn,
                "awsRegion": region,
            }
            for message in messages
        ]
    }


class QueuePoller:
    """Lambda's SQS event source mapping for one queue and one handler.

    Messages the handler reports as failed are left on the queue and made visible again after
    `retry_delay` (Lambda waits for the visibility timeout; locally that would be 30 minutes),
    so SQS's redrive policy moves a message that keeps failing to the dead-letter queue.

    It runs one invocation at a time, so it keeps any MaximumConcurrency the mapping has (the
    template's AgentTurnMaxConcurrency, at least 2).
    """

    def __init__(
        self,
        sqs: SQSClient,
        queue_url: str,
        handler: Handler,
        *,
        context: Callable[[], LocalLambdaContext],
        batch_size: int = 1,
        retry_delay: int = 1,
    ) -> None:
        self._sqs = sqs
        self._queue_url = queue_url
        self._handler = handler
        self.context = context  # replaceable: a test can give invocations less time
        self._batch_size = batch_size
        self._retry_delay = retry_delay
        attributes = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])
        self._queue_arn = attributes["Attributes"]["QueueArn"]
        self.invocations = 0
        self.failures = 0
        # When the last failed message becomes visible again. moto computes the queue's visible
        # and in-flight counts at slightly different instants, so at that very moment both can
        # read 0; until then the poller knows a retry is coming without asking the queue.
        self._retry_due = 0.0
        self._running = 0  # handler invocations under way (the chat's Ctrl-C asks)

    def poll_once(self, wait_seconds: int = 0) -> int:
        """Receive one batch and run the handler on it; returns how many messages were received."""
        received = self._sqs.receive_message(
            QueueUrl=self._queue_url,
            MaxNumberOfMessages=self._batch_size,
            WaitTimeSeconds=wait_seconds,
            AttributeNames=["All"],
            MessageSystemAttributeNames=["All"],
            MessageAttributeNames=["All"],
        )
        messages = received.get("Messages", [])
        if not messages:
            return 0
        self.invocations += 1
        self._running += 1
        try:
            event = sqs_event(messages, self._queue_arn, "us-east-1")
            response = self._handler(event, self.context())
            failed = {
                item["itemIdentifier"] for item in (response or {}).get("batchItemFailures", [])
            }
        except Exception:
            failed = {message["MessageId"] for message in messages}  # the whole batch failed
        finally:
            self._running -= 1
        for message in messages:
            if message["MessageId"] in failed:
                self.failures += 1
                self._sqs.change_message_visibility(
                    QueueUrl=self._queue_url,
                    ReceiptHandle=message["ReceiptHandle"],
                    VisibilityTimeout=self._retry_delay,
                )
                self._retry_due = time.monotonic() + self._retry_delay + 0.2
            else:
                self._sqs.delete_message(
                    QueueUrl=self._queue_url, ReceiptHandle=message["ReceiptHandle"]
                )
        return len(messages)

    @property
    def busy(self) -> bool:
        """A turn (a handler invocation) is running now."""
        return self._running > 0

    def drain(self, idle_seconds: float = 0.0, max_seconds: float = 600) -> None:
        """Process until the queue has stayed empty for `idle_seconds` (and retries are done)."""
        deadline = time.monotonic() + max_seconds
        idle_since: float | None = None
        while time.monotonic() < deadline:
            if self.poll_once():
                idle_since = None
                continue
            if not self._has_in_flight():
                idle_since = idle_since or time.monotonic()
                if time.monotonic() - idle_since >= idle_seconds:
                    return
            time.sleep(0.1)
        raise TimeoutError(f"queue not drained within {max_seconds} s")

    def wait_idle(self, max_seconds: float = 600, settle: float = 0.3) -> None:
        """Wait (without processing) until the queue is empty and nothing is in flight."""
        deadline = time.monotonic() + max_seconds
        while time.monotonic() < deadline:
            if not self._has_in_flight():
                time.sleep(settle)  # a turn may be queueing a follow-up (announcement, task)
                if not self._has_in_flight():
                    return
            time.sleep(0.1)
        raise TimeoutError(f"queue not idle within {max_seconds} s")

    def _has_in_flight(self) -> bool:
        if time.monotonic() < self._retry_due:
            return True
        attributes = self._sqs.get_queue_attributes(
            QueueUrl=self._queue_url,
            AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
        )["Attributes"]
        return any(int(value) for value in attributes.values())
