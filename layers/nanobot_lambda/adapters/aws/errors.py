"""botocore's failures, mapped at the edge: what an AWS adapter does not handle itself leaves it
as a `StorageError` (the botocore exception kept as its `__cause__`, for the logs)."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import ParamSpec, TypeVar

from botocore.exceptions import BotoCoreError, ClientError

from nanobot_lambda.core.errors import NanobotError, StorageError

P = ParamSpec("P")
R = TypeVar("R")

CONDITION_FAILED = "ConditionalCheckFailedException"


def error_code(error: ClientError) -> str:
    return str(error.response.get("Error", {}).get("Code", ""))


def aws_errors(method: Callable[P, R]) -> Callable[P, R]:
    """Decorate an adapter method: botocore's exceptions come out as StorageError (the
    adapter's own errors, already the core's, pass through)."""

    @wraps(method)
    def mapped(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return method(*args, **kwargs)
        except NanobotError:
            raise
        except ClientError as error:
            raise StorageError(f"{method.__qualname__}: {error_code(error)}") from error
        except BotoCoreError as error:
            raise StorageError(f"{method.__qualname__}: {type(error).__name__}") from error

    return mapped


TRANSACTION_CANCELLED = "TransactionCanceledException"
# A cancelled transaction's reasons (one per item) that say DynamoDB was only busy: the same
# transaction, sent again a moment later, may pass. ("None": that item was not the cause.)
BUSY_REASONS = frozenset(
    {"TransactionConflict", "ThrottlingError", "ProvisionedThroughputExceeded"}
)


def cancellation_reasons(error: ClientError) -> list[str]:
    """Why a TransactWriteItems was cancelled: one code per item, in the order of the items
    (botocore's `CancellationReasons`); empty for any other error."""
    if error_code(error) != TRANSACTION_CANCELLED:
        return []
    reasons = error.response.get("CancellationReasons", [])
    return [str(reason.get("Code", "None")) for reason in reasons]


def written(write: Callable[[], object], refused: str = CONDITION_FAILED) -> bool:
    """Make a conditional write: True when it was made, False when its condition refused it
    (`refused`: the error code that means so; for a transaction, TRANSACTION_CANCELLED)."""
    try:
        write()
    except ClientError as error:
        if error_code(error) == refused:
            return False
        raise
    return True
