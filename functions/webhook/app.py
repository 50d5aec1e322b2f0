"""Webhook function: Telegram update in, turn job onto the SQS FIFO queue, fast 200 out. Also
the event hooks' route (`POST /hooks/{name}`, nanobot_lambda.functions.inbound_events): a signed
event in, a task queued.

Must never import litellm (a test guards it): it is the latency-critical cold start.
"""

from typing import Any

from nanobot_lambda.functions import init_phase

init_phase.begin()  # no garbage collection while the init makes its long-lived objects

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.typing import LambdaContext

from nanobot_lambda.adapters.aws.albums import DynamoAlbumBook
from nanobot_lambda.adapters.aws.approvals import DynamoApprovalBook
from nanobot_lambda.adapters.aws.clients import dynamodb_client, sqs_client
from nanobot_lambda.adapters.aws.idempotency import IdempotentUpdateLedger
from nanobot_lambda.adapters.aws.inbound_events import DynamoHookStore
from nanobot_lambda.adapters.aws.invites import DynamoInviteStore
from nanobot_lambda.adapters.aws.logs import configure_logging
from nanobot_lambda.adapters.aws.metrics import EMF, metrics
from nanobot_lambda.adapters.aws.pairing import DynamoPairingStore
from nanobot_lambda.adapters.aws.queue import SqsTurnQueue
from nanobot_lambda.adapters.aws.reactions_and_edits import DynamoFeedbackBook
from nanobot_lambda.adapters.aws.secrets import fetch_secret
from nanobot_lambda.adapters.aws.stop_flags import DynamoStopFlags
from nanobot_lambda.core.invites import Invites
from nanobot_lambda.core.pairing import Pairing
from nanobot_lambda.functions.inbound_events import HookReceiver, hook_name
from nanobot_lambda.functions.webhook import Webhook, WebhookPolicy, WebhookRecords
from nanobot_lambda.settings import WebhookSettings

logger = Logger()

# Built once per container, in the init phase; a bad setting fails here, naming the variable.
# A secret given as a reference (X_PARAM, X_SECRET_ARN) is read from SSM / Secrets Manager.
settings = WebhookSettings.from_env(fetch=fetch_secret)
configure_logging(logger, settings.secret_values())  # secrets redacted from every log
dynamodb = dynamodb_client()
ledger = IdempotentUpdateLedger(settings.idempotency_table, dynamodb)
queue = SqsTurnQueue(settings.turn_queue_url, sqs_client())
hook_store = DynamoHookStore(settings.sessions_table, lambda: dynamodb)
hook_receiver = HookReceiver(hook_store, hook_store, queue, EMF)
people = DynamoPairingStore(settings.sessions_table, lambda: dynamodb)
webhook = Webhook(
    settings.telegram_secret_token,
    WebhookPolicy(
        settings.allow_from,
        settings.group_policy,
        settings.ack_reaction,
        pairing_codes=settings.pairing == "on",
    ),
    queue,
    WebhookRecords(
        ledger,
        DynamoStopFlags(settings.sessions_table, lambda: dynamodb),
        DynamoAlbumBook(settings.sessions_table, lambda: dynamodb),
        # Who the owner approved or invited (read whatever PAIRING says: invites need no
        # pairing); with PAIRING=on strangers also get codes (WebhookPolicy.pairing_codes).
        pairing=Pairing(people, codes_per_hour=settings.pairing_codes_per_hour),
        feedback=DynamoFeedbackBook(settings.sessions_table, lambda: dynamodb),
        approvals=DynamoApprovalBook(settings.sessions_table, lambda: dynamodb),
        invites=Invites(DynamoInviteStore(settings.sessions_table, lambda: dynamodb), people),
    ),
    EMF,
)
init_phase.end()


@logger.inject_lambda_context(clear_state=True)
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    name = hook_name(event)
    if name is not None:
        return hook_receiver.handle(event, name).to_http()
    ledger.register(context)
    return webhook.handle(event).to_http()
