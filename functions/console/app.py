"""Console function: the owner's console, a Telegram Mini App (`GET /console`, the page) and its
API (`POST /console/api/<route>`), behind the HTTP API. functions/console/ holds the logic.

Must never import litellm (a test guards it): it starts in well under a second.
"""

from datetime import UTC, datetime, timedelta
from typing import Any

from nanobot_lambda.functions import init_phase

init_phase.begin()  # no garbage collection while the init makes its long-lived objects

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.typing import LambdaContext

from nanobot_lambda.adapters.aws.clients import (
    dynamodb_client,
    s3_client,
    scheduler_client,
    sqs_client,
)
from nanobot_lambda.adapters.aws.dead_letters import DeadLetterQueue
from nanobot_lambda.adapters.aws.inbound_events import DynamoHookStore
from nanobot_lambda.adapters.aws.jobs import DynamoJobStore
from nanobot_lambda.adapters.aws.logs import configure_logging
from nanobot_lambda.adapters.aws.pairing import DynamoPairingStore
from nanobot_lambda.adapters.aws.schedules import EventBridgeSchedules
from nanobot_lambda.adapters.aws.secrets import fetch_secret
from nanobot_lambda.adapters.aws.sessions import DynamoSessionStore
from nanobot_lambda.adapters.aws.usage import DynamoUsageStore
from nanobot_lambda.adapters.aws.workspace import any_scope_workspace
from nanobot_lambda.core.allowlist import Audience
from nanobot_lambda.core.pairing import Pairing
from nanobot_lambda.functions.console.api import ConsoleApi
from nanobot_lambda.functions.console.auth import ConsoleAuth
from nanobot_lambda.functions.console.page import ConsolePage
from nanobot_lambda.functions.console.ports import ConsolePorts, Lazily
from nanobot_lambda.settings import ConsoleSettings

logger = Logger()

# Built once per container, in the init phase; a bad setting fails here, naming the variable.
# A secret given as a reference (X_PARAM, X_SECRET_ARN) is read from SSM / Secrets Manager.
settings = ConsoleSettings.from_env(fetch=fetch_secret)
configure_logging(logger, settings.secret_values())  # secrets redacted from every log
dynamodb = dynamodb_client()
# Who the owner approved or invited (core/pairing.py, core/invites.py): each may sign in to
# their own scope whatever PAIRING says; the People section's codes are pairing's (PAIRING=on).
people_store = DynamoPairingStore(settings.sessions_table, lambda: dynamodb)
pairing_store = people_store if settings.pairing == "on" else None


def welcome(user_id: int) -> None:
    """Tell a person approved in the console that they may write now, as /approve does. The
    Bot API client is imported on this first use only: the console's cold start skips it."""
    from nanobot_lambda.adapters.telegram.client import TelegramBot
    from nanobot_lambda.core import texts
    from nanobot_lambda.core.errors import ChannelError

    bot = TelegramBot(settings.telegram_bot_token, settings.telegram_api_base)
    try:
        bot.send_text(user_id, texts.load("pairing_welcome"))
    except ChannelError as error:  # e.g. they blocked the bot meanwhile: still approved
        logger.warning("could not welcome an approved person: %s", error)


def dead_letter_queue(url: str) -> Lazily:
    return Lazily(lambda: DeadLetterQueue(url, sqs_client()))


ports = ConsolePorts(
    workspace=any_scope_workspace(settings.workspace_bucket, s3_client()),
    jobs=DynamoJobStore(settings.jobs_table, dynamodb),
    schedules=Lazily(
        lambda: EventBridgeSchedules(
            scheduler_client(),
            group=settings.schedule_group,
            target_arn=settings.scheduler_target_arn,
            role_arn=settings.scheduler_role_arn,
        )
    ),
    hooks=DynamoHookStore(settings.sessions_table, lambda: dynamodb),
    sessions=DynamoSessionStore(settings.sessions_table, dynamodb),
    usage=DynamoUsageStore(settings.sessions_table, dynamodb, timezone=settings.timezone),
    pairing=pairing_store,
    welcome=welcome,
    dead_letters=dead_letter_queue(settings.turn_dlq_url) if settings.turn_dlq_url else None,
)
auth = ConsoleAuth(
    settings.telegram_bot_token.get_secret_value(),
    Audience(settings.owner, settings.allow_from, approved=Pairing(people_store).is_approved),
    max_age=timedelta(seconds=settings.console_launch_max_age_seconds),
    clock=lambda: datetime.now(UTC),
)
console = ConsoleApi(settings, ports, auth)
page = ConsolePage()
init_phase.end()


@logger.inject_lambda_context(clear_state=True)
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return console.handle(event, page)
