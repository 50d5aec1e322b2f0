"""Scheduler function: events from EventBridge Scheduler (today: the heartbeat)."""

from typing import Any

from aws_lambda_powertools import Logger, Tracer
from aws_lambda_powertools.utilities.typing import LambdaContext

from nanobot_lambda import tracing
from nanobot_lambda.aws import dynamodb_client, s3_client, sqs_client
from nanobot_lambda.cronjobs import JobStore
from nanobot_lambda.jobs import TurnQueue
from nanobot_lambda.logs import configure_logging
from nanobot_lambda.metrics import count_errors, metrics
from nanobot_lambda.scheduler import SchedulerService
from nanobot_lambda.settings import SchedulerSettings
from nanobot_lambda.telegram.client import TelegramBot
from nanobot_lambda.workspace import S3Workspace

logger = Logger()
tracer = Tracer()  # X-Ray when deployed (Tracing: Active); inert in tests and the local stack
tracing.use(tracer)

settings = SchedulerSettings.from_env()
configure_logging(logger, settings.secret_values())  # secrets redacted from every log
scheduler = SchedulerService(
    workspace=S3Workspace(settings.workspace_bucket, s3_client()),
    queue=TurnQueue(settings.turn_queue_url, sqs_client()),
    jobs=JobStore(settings.jobs_table, dynamodb_client()),
    bot=TelegramBot(settings.telegram_bot_token, settings.telegram_api_base),
    heartbeat_chat_id=settings.heartbeat_chat_id,
)


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler
@metrics.log_metrics
@count_errors("scheduler_failed")
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, str]:
    return scheduler.handle(event)
