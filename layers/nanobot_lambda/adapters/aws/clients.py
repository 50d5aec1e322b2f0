"""boto3 clients, created by the handlers once per container and passed down (injectable).

No endpoint is hard-coded: boto3 honours `AWS_ENDPOINT_URL` (moto locally, AWS when deployed).

Timestamps in responses are parsed faster than botocore does by default, in every botocore
session created after this module is imported (the handlers import it before making any
client): S3's listing carries a LastModified per key, which dateutil parsed at about 0.1 ms
each, the larger part of a warm turn's own time with 200 skills (bench/warm_turn.py).
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

import boto3
import botocore
import botocore.session
import botocore.utils
from botocore.config import Config

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_s3 import S3Client
    from mypy_boto3_scheduler import EventBridgeSchedulerClient
    from mypy_boto3_sqs import SQSClient

# Standard retry mode backs off on throttling and 5xx; short connect timeouts keep a webhook
# responsive (Telegram retries a slow webhook, which is worse than a fast 5xx).
CLIENT_CONFIG = Config(
    retries={"mode": "standard", "max_attempts": 4},
    connect_timeout=3,
    read_timeout=20,
)


def parse_timestamp(value: Any) -> datetime:
    """botocore's `parse_timestamp`, with ISO 8601 and a zone (S3's XML) parsed by the standard
    library; anything else (epoch numbers, RFC 822, no zone) as botocore parses it."""
    if isinstance(value, str) and "T" in value:
        try:
            parsed = datetime.fromisoformat(value)
        except ValueError:
            pass
        else:
            if parsed.tzinfo is not None:
                return parsed
    return botocore.utils.parse_timestamp(value)


def _with_fast_timestamps(session: botocore.session.Session) -> None:
    parsers = session.get_component("response_parser_factory")
    parsers.set_parser_defaults(timestamp_parser=parse_timestamp)


botocore.register_initializer(_with_fast_timestamps)


def s3_client() -> S3Client:
    return boto3.client("s3", config=CLIENT_CONFIG)


def sqs_client() -> SQSClient:
    return boto3.client("sqs", config=CLIENT_CONFIG)


def dynamodb_client() -> DynamoDBClient:
    return boto3.client("dynamodb", config=CLIENT_CONFIG)


def scheduler_client() -> EventBridgeSchedulerClient:
    return boto3.client("scheduler", config=CLIENT_CONFIG)


def lambda_client() -> Any:
    """For the code sandbox: a run may take its full minute, so reads wait longer than the
    other clients' (no retry: a run is not repeated behind the model's back)."""
    config = CLIENT_CONFIG.merge(Config(read_timeout=90, retries={"max_attempts": 1}))
    return boto3.client("lambda", config=config)
