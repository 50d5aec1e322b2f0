"""Accept each Telegram update once, however often Telegram delivers it.

Telegram re-sends an update until the webhook answers 2xx, for up to about a day. SQS FIFO drops
a duplicate only within five minutes, so the webhook records every update it queued with
Powertools Idempotency (a DynamoDB item keyed by the update id, kept `UPDATE_RECORD_SECONDS`).
A repeat of a queued update is answered 200 without queueing it again: one update, one turn.

If queueing fails the record is deleted (Powertools does this when the function raises), so
Telegram's retry is queued normally. A repeat that arrives while the first delivery is still
being queued is answered "retry later".
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools.utilities.idempotency import (
    DynamoDBPersistenceLayer,
    IdempotencyConfig,
    idempotent_function,
)
from aws_lambda_powertools.utilities.idempotency.exceptions import (
    IdempotencyAlreadyInProgressError,
)

from nanobot_lambda.core.errors import UpdateInProgress

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.idempotency.persistence.datarecord import DataRecord
    from aws_lambda_powertools.utilities.typing import LambdaContext
    from mypy_boto3_dynamodb import DynamoDBClient

# Telegram gives up on an update after about 24 hours; keep the record twice that.
UPDATE_RECORD_SECONDS = 48 * 3600


class IdempotentUpdateLedger:
    """The `UpdateLedger` port on Powertools Idempotency: `once(update, enqueue)` runs `enqueue`
    for the first delivery of an update only."""

    def __init__(self, table: str, dynamodb: DynamoDBClient) -> None:
        self._config = IdempotencyConfig(
            event_key_jmespath="update_id",
            raise_on_no_idempotency_key=True,
            expires_after_seconds=UPDATE_RECORD_SECONDS,
            response_hook=_mark_repeat,
        )
        persistence = DynamoDBPersistenceLayer(table_name=table, boto3_client=dynamodb)

        @idempotent_function(  # type: ignore[untyped-decorator]
            data_keyword_argument="update",
            persistence_store=persistence,
            config=self._config,
        )
        def first_delivery(update: dict[str, Any], enqueue: Callable[[], str]) -> dict[str, Any]:
            return {"message_id": enqueue(), "repeat": False}

        self._first_delivery = first_delivery

    def register(self, context: LambdaContext) -> None:
        """Lets an in-progress record expire with the invocation that wrote it."""
        self._config.register_lambda_context(context)

    def once(self, update: dict[str, Any], enqueue: Callable[[], str]) -> bool:
        """Run `enqueue` unless this update was queued before; True when it ran now.

        Raises what `enqueue` raises (the record is then dropped, so a retry runs it), and
        `UpdateInProgress` when another invocation is queueing the same update.
        """
        try:
            result = self._first_delivery(update=update, enqueue=enqueue)
        except IdempotencyAlreadyInProgressError:
            raise UpdateInProgress(str(update.get("update_id"))) from None
        return not bool((result or {}).get("repeat"))


def _mark_repeat(response: Any, idempotent_data: DataRecord) -> dict[str, Any]:
    """Powertools calls this only when it answers from a stored record: a repeated update."""
    return {**(response or {}), "repeat": True}
