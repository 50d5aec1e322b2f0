"""agent_turn function: one queued job per record (SQS FIFO, partial batch responses).

A record that raises is reported as a batch item failure: SQS retries it (after a short
backoff) and, after maxReceiveCount attempts, moves it to the dead-letter queue; see
nanobot_lambda.records. Other chats' records go on (`skip_group_on_error`); later records of
the failing chat wait, preserving order.
"""

import os
from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.batch import (
    SqsFifoPartialProcessor,
    process_partial_response,
)
from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
from aws_lambda_powertools.utilities.typing import LambdaContext

from nanobot_lambda.aws import dynamodb_client, s3_client, scheduler_client, sqs_client
from nanobot_lambda.commands import StopFlags
from nanobot_lambda.cronjobs import JobStore, ScheduleClient
from nanobot_lambda.jobs import TurnQueue
from nanobot_lambda.journal import TurnJournal
from nanobot_lambda.litellm_model import LitellmChatModel
from nanobot_lambda.logs import configure_logging
from nanobot_lambda.media import transcriber_for
from nanobot_lambda.records import RecordRunner
from nanobot_lambda.sessions import DynamoSessionStore
from nanobot_lambda.settings import AgentSettings
from nanobot_lambda.telegram.client import TelegramBot
from nanobot_lambda.turns import TurnService
from nanobot_lambda.workspace import S3Workspace

logger = Logger()

settings = AgentSettings.from_env()
configure_logging(logger, settings.secret_values())  # secrets redacted from every log
dynamodb = dynamodb_client()
sqs = sqs_client()
turns = TurnService(
    settings,
    workspace=S3Workspace(settings.workspace_bucket, s3_client()),
    sessions=DynamoSessionStore(settings.sessions_table, dynamodb),
    stop_flags=StopFlags(settings.sessions_table, lambda: dynamodb),
    jobs=JobStore(settings.jobs_table, dynamodb),
    schedules=ScheduleClient(
        scheduler_client(),
        group=settings.schedule_group,
        target_arn=settings.scheduler_target_arn,
        role_arn=settings.scheduler_role_arn,
    ),
    queue=TurnQueue(settings.turn_queue_url, sqs),
    journal=TurnJournal(settings.sessions_table, dynamodb),
    model=LitellmChatModel(settings),
    bot=TelegramBot(settings.telegram_bot_token, settings.telegram_api_base),
    environ=os.environ,  # skills check their `requires.env` against it
    transcriber=transcriber_for(settings),  # None unless TRANSCRIPTION_MODEL is set
)
records = RecordRunner(
    turns,
    sqs,
    settings.turn_queue_url,
    max_receive_count=settings.turn_max_receive_count,
    backoff_seconds=settings.retry_backoff_seconds,
)
processor = SqsFifoPartialProcessor(skip_group_on_error=True)


@logger.inject_lambda_context(clear_state=True)
def handler(event: dict[str, Any], context: LambdaContext) -> PartialItemFailureResponse:
    return process_partial_response(
        event=event, record_handler=records.run, processor=processor, context=context
    )
