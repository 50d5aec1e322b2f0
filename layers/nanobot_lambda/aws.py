"""boto3 clients, created by the handlers once per container and passed down (injectable).

No endpoint is hard-coded: boto3 honours `AWS_ENDPOINT_URL` (moto locally, AWS when deployed).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import boto3
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


def s3_client() -> S3Client:
    return boto3.client("s3", config=CLIENT_CONFIG)


def sqs_client() -> SQSClient:
    return boto3.client("sqs", config=CLIENT_CONFIG)


def dynamodb_client() -> DynamoDBClient:
    return boto3.client("dynamodb", config=CLIENT_CONFIG)


def scheduler_client() -> EventBridgeSchedulerClient:
    return boto3.client("scheduler", config=CLIENT_CONFIG)
