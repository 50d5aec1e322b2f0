"""Scheduler function: events from EventBridge Scheduler (today: the heartbeat)."""

from typing import Any

from nanobot_lambda.functions import init_phase

init_phase.begin()  # no garbage collection while the init makes its long-lived objects

from aws_lambda_powertools import Logger, Tracer
from aws_lambda_powertools.utilities.typing import LambdaContext

from nanobot_lambda.adapters.aws.approvals import DynamoApprovalBook
from nanobot_lambda.adapters.aws.clients import dynamodb_client, s3_client, sqs_client
from nanobot_lambda.adapters.aws.jobs import DynamoJobStore
from nanobot_lambda.adapters.aws.logs import configure_logging
from nanobot_lambda.adapters.aws.metrics import EMF, count_errors, metrics
from nanobot_lambda.adapters.aws.queue import SqsTurnQueue
from nanobot_lambda.adapters.aws.secrets import fetch_secret
from nanobot_lambda.adapters.aws.workspace import S3Workspace
from nanobot_lambda.adapters.telegram.client import TelegramBot
from nanobot_lambda.core import telemetry
from nanobot_lambda.functions.scheduler import SchedulerPorts, SchedulerService
from nanobot_lambda.settings import SchedulerSettings

logger = Logger()
tracer = Tracer()  # X-Ray when deployed (Tracing: Active); inert in tests and the local stack
telemetry.use(tracer)

# A secret given as a reference (X_PARAM, X_SECRET_ARN) is read from SSM / Secrets Manager.
settings = SchedulerSettings.from_env(fetch=fetch_secret)
configure_logging(logger, settings.secret_values())  # secrets redacted from every log
scheduler = SchedulerService(
    SchedulerPorts(
        workspace=S3Workspace(settings.workspace_bucket, s3_client()),
        queue=SqsTurnQueue(settings.turn_queue_url, sqs_client()),
        jobs=DynamoJobStore(settings.jobs_table, dynamodb_client()),
        channel=TelegramBot(settings.telegram_bot_token, settings.telegram_api_base),
        metrics=EMF,
        approvals=DynamoApprovalBook(settings.sessions_table, dynamodb_client),
    ),
    heartbeat_chat_id=settings.heartbeat_chat_id,
)
init_phase.end()


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler
@metrics.log_metrics
@count_errors("scheduler_failed")
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, str]:
    return scheduler.handle(event)
