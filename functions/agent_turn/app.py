"""agent_turn function: one queued job per record (SQS FIFO, partial batch responses).

A record that raises is reported as a batch item failure: SQS retries it (after a short
backoff) and, after maxReceiveCount attempts, moves it to the dead-letter queue; see
nanobot_lambda.functions.agent_turn.sqs_records. Other chats' records go on (`skip_group_on_error`);
later records of the failing chat wait, preserving order.

A cold start reads the system prompt's files while the imports below run (litellm's alone takes
seconds): the prefetch starts first, on the S3 client the workspace then uses (issue 31; see
nanobot_lambda.adapters.aws.workspace). The keep-warm ping (nanobot_lambda.functions.keep_warm) is
answered before anything else the handler does.
"""

from __future__ import annotations

import os
from functools import partial
from typing import TYPE_CHECKING, Any

from nanobot_lambda.functions import init_phase

init_phase.begin()  # no garbage collection while the init makes its long-lived objects

from nanobot_lambda.adapters.aws.clients import lambda_client, workspace_s3_client
from nanobot_lambda.adapters.aws.sandbox import LambdaSandbox
from nanobot_lambda.adapters.aws.workspace import WorkspacePrefetch
from nanobot_lambda.core.context import is_prompt_file

s3 = workspace_s3_client()
# Not into a SnapStart snapshot: what is read then would be restored days later, so a restored
# copy reads at its first turn.
_early = os.environ.get("AWS_LAMBDA_INITIALIZATION_TYPE") != "snap-start"
prefetch = (
    WorkspacePrefetch(os.environ["WORKSPACE_BUCKET"], s3, is_prompt_file).start()
    if _early and os.environ.get("WORKSPACE_BUCKET")
    else None
)
# The first turn's prompt names the sandbox's programs: asked now, the sandbox's own cold start
# overlaps this one's.
early_sandbox = (
    LambdaSandbox(os.environ["SANDBOX_FUNCTION"], lambda_client()).ask_programs_early()
    if _early and os.environ.get("SANDBOX_FUNCTION")
    else None
)

from aws_lambda_powertools import Logger, Tracer
from aws_lambda_powertools.utilities.batch import (
    SqsFifoPartialProcessor,
    process_partial_response,
)
from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.typing import LambdaContext

from nanobot_lambda.adapters.aws import snapstart
from nanobot_lambda.adapters.aws.albums import DynamoAlbumBook
from nanobot_lambda.adapters.aws.approvals import DynamoApprovalBook
from nanobot_lambda.adapters.aws.clients import (
    dynamodb_client,
    scheduler_client,
    sqs_client,
)
from nanobot_lambda.adapters.aws.inbound_events import DynamoHookStore
from nanobot_lambda.adapters.aws.invites import DynamoInviteStore
from nanobot_lambda.adapters.aws.jobs import DynamoJobStore
from nanobot_lambda.adapters.aws.journal import DynamoTurnJournal
from nanobot_lambda.adapters.aws.log_correlation import correlated
from nanobot_lambda.adapters.aws.logs import configure_logging
from nanobot_lambda.adapters.aws.metrics import EMF, metrics
from nanobot_lambda.adapters.aws.pairing import DynamoPairingStore
from nanobot_lambda.adapters.aws.queue import SqsTurnQueue
from nanobot_lambda.adapters.aws.reactions_and_edits import DynamoFeedbackBook
from nanobot_lambda.adapters.aws.recall_index import S3RecallIndexObjects
from nanobot_lambda.adapters.aws.schedules import ApprovalDeadlineSchedules, EventBridgeSchedules
from nanobot_lambda.adapters.aws.secrets import fetch_secret
from nanobot_lambda.adapters.aws.sessions import DynamoSessionStore
from nanobot_lambda.adapters.aws.stop_flags import DynamoStopFlags
from nanobot_lambda.adapters.aws.usage import DynamoUsageStore
from nanobot_lambda.adapters.aws.workspace import (
    S3Workspace,
    any_scope_workspace,
    scope_workspaces,
)
from nanobot_lambda.adapters.llm.catalog import LitellmModelCatalog, served_at
from nanobot_lambda.adapters.llm.embeddings import embedder_for
from nanobot_lambda.adapters.llm.images import image_generator_for
from nanobot_lambda.adapters.llm.litellm_model import (
    LitellmChatModel,
    forget_connections,
    import_first_use_modules,
)
from nanobot_lambda.adapters.llm.speech import speaker_for
from nanobot_lambda.adapters.llm.tokens import LitellmTokenCounter
from nanobot_lambda.adapters.llm.transcription import transcriber_for
from nanobot_lambda.adapters.mcp.client import mcp_servers
from nanobot_lambda.adapters.telegram.client import TelegramBot
from nanobot_lambda.core import telemetry
from nanobot_lambda.functions import keep_warm
from nanobot_lambda.functions.agent_turn.dispatch import Dispatcher
from nanobot_lambda.functions.agent_turn.sqs_records import RecordRunner
from nanobot_lambda.functions.agent_turn.turn_deps import Services, Stores, TurnPorts
from nanobot_lambda.settings import AgentSettings

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

logger = Logger()
tracer = Tracer()  # X-Ray when deployed (Tracing: Active); inert in tests and the local stack
telemetry.use(tracer)

# A secret given as a reference (X_PARAM, X_SECRET_ARN) is read from SSM / Secrets Manager.
settings = AgentSettings.from_env(fetch=fetch_secret)
configure_logging(logger, settings.secret_values())  # secrets redacted from every log

# What the model's first completion would import, now rather than in the first turn: into the
# snapshot under SnapStart, and for keep-warm into the ping's init. (Not in a thread beside the
# other imports: a probe of the init hung once in six that way.)
import_first_use_modules(settings.llm_model)


def _model_for(name: str | None) -> LitellmChatModel | None:
    """A model for background work, or None to use LLM_MODEL."""
    return LitellmChatModel(settings, name) if name else None


def build_records(
    s3: S3Client | None = None,
    prefetched: WorkspacePrefetch | None = None,
    sandbox: LambdaSandbox | None = None,
) -> RecordRunner:
    """The turn machinery and its clients: made at init (with the prefetch's S3 client, whose
    connection is then open, and the sandbox already asked for its programs), and anew after a
    SnapStart restore."""
    s3 = s3 or workspace_s3_client()
    dynamodb = dynamodb_client()
    telegram = TelegramBot(settings.telegram_bot_token, settings.telegram_api_base)
    queue = SqsTurnQueue(settings.turn_queue_url, sqs_client())
    stores = Stores(
        workspace=S3Workspace(settings.workspace_bucket, s3, prefetch=prefetched),
        scope_workspace=scope_workspaces(settings.workspace_bucket, s3),
        versioned_workspace=any_scope_workspace(settings.workspace_bucket, s3),
        sessions=DynamoSessionStore(
            settings.sessions_table,
            dynamodb,
            summarised_keep_days=settings.session_retention_days or None,
        ),
        journal=DynamoTurnJournal(settings.sessions_table, dynamodb),
        jobs=DynamoJobStore(settings.jobs_table, dynamodb),
        usage=DynamoUsageStore(settings.sessions_table, dynamodb, timezone=settings.timezone),
        stop_flags=DynamoStopFlags(settings.sessions_table, lambda: dynamodb),
        albums=DynamoAlbumBook(settings.sessions_table, lambda: dynamodb),
        pairing=DynamoPairingStore(settings.sessions_table, lambda: dynamodb),
        hooks=DynamoHookStore(settings.sessions_table, lambda: dynamodb),
        feedback=DynamoFeedbackBook(settings.sessions_table, lambda: dynamodb),
        approvals=DynamoApprovalBook(settings.sessions_table, lambda: dynamodb),
        recall_indexes=S3RecallIndexObjects(settings.workspace_bucket, s3),
        invites=DynamoInviteStore(settings.sessions_table, lambda: dynamodb),
    )
    model = LitellmChatModel(settings)
    services = Services(
        channel=telegram,
        media=telegram,
        model=model,
        models=LitellmModelCatalog(settings, default=model),  # /model and /think
        images=image_generator_for(settings),  # None unless IMAGE_MODEL is set
        heartbeat_model=_model_for(settings.heartbeat_model),
        consolidation_model=_model_for(settings.consolidation_model),
        tokens=LitellmTokenCounter(settings.llm_model, **served_at(settings)),
        queue=queue,
        schedules=EventBridgeSchedules(
            scheduler_client(),
            group=settings.schedule_group,
            target_arn=settings.scheduler_target_arn,
            role_arn=settings.scheduler_role_arn,
        ),
        deadlines=ApprovalDeadlineSchedules(
            scheduler_client(),
            group=settings.schedule_group,
            target_arn=settings.scheduler_target_arn,
            role_arn=settings.scheduler_role_arn,
        ),
        transcriber=transcriber_for(settings),  # None unless TRANSCRIPTION_MODEL is set
        speaker=speaker_for(settings),
        embedder=embedder_for(settings),  # None unless EMBEDDING_MODEL is set
        remote_servers=mcp_servers(
            settings.mcp_servers, settings.web_fetch_allow_networks, fetch_secret
        ),
        sandbox=(
            sandbox or LambdaSandbox(settings.sandbox_function, lambda_client())
            if settings.sandbox_function
            else None
        ),  # None without the sandbox (EnableSandbox false)
    )
    # Skills check their `requires.env` against the environment.
    turns = Dispatcher(settings, TurnPorts(stores, services, EMF), environ=os.environ)
    return RecordRunner(
        turns,
        queue,
        max_receive_count=settings.turn_max_receive_count,
        backoff_seconds=settings.retry_backoff_seconds,
        on_last_failure=lambda: telemetry.dlq_sent(EMF),
        correlate=partial(correlated, logger),  # each job's ids on its log records
    )


records = build_records(s3, prefetch, early_sandbox)
processor = SqsFifoPartialProcessor(skip_group_on_error=True)


def _rebuild_records() -> None:
    """After a SnapStart restore: the turn machinery anew (clients, caches, clocks)."""
    global records, s3
    forget_connections()
    s3 = workspace_s3_client()
    records = build_records(s3)


# Restored copies get their own connections, clients, turn state and random seed.
snapstart.register(_rebuild_records, close=forget_connections)
init_phase.end()


def process_record(record: SQSRecord, lambda_context: LambdaContext | None = None) -> None:
    """`records.run` (Powertools passes `lambda_context` by name; `records` is rebuilt after a
    SnapStart restore)."""
    records.run(record, lambda_context)


def handler(event: dict[str, Any], context: LambdaContext) -> PartialItemFailureResponse:
    if keep_warm.is_keep_warm(event):  # before logging, tracing and metrics: touches nothing
        return {"batchItemFailures": []}  # an empty batch response, as a hand-made ping reads
    response: PartialItemFailureResponse = process_records(event, context)  # decorated: Any
    return response


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler
@metrics.log_metrics
def process_records(event: dict[str, Any], context: LambdaContext) -> PartialItemFailureResponse:
    return process_partial_response(
        event=event, record_handler=process_record, processor=processor, context=context
    )
