"""Powertools Idempotency on moto server: an update is queued once, however often it arrives."""

from __future__ import annotations

import threading

import pytest

from nanobot_lambda.adapters.aws.clients import dynamodb_client
from nanobot_lambda.adapters.aws.idempotency import IdempotentUpdateLedger
from nanobot_lambda.core.errors import UpdateInProgress
from nanobot_lambda.operator.local.cfn import TemplateContext
from nanobot_lambda.operator.local.runtime import LocalLambdaContext
from tests.conftest import telegram_update


@pytest.fixture
def ledger(resources: TemplateContext) -> IdempotentUpdateLedger:
    made = IdempotentUpdateLedger(resources.refs["IdempotencyTable"], dynamodb_client())
    made.register(LocalLambdaContext("webhook", 10, 256))  # type: ignore[arg-type]
    return made


def test_the_second_delivery_of_an_update_is_not_queued(ledger: IdempotentUpdateLedger) -> None:
    queued: list[int] = []
    update = telegram_update("text_private")

    def enqueue() -> str:
        queued.append(update["update_id"])
        return "message-1"

    assert ledger.once(update, enqueue) is True
    assert ledger.once(update, enqueue) is False
    assert ledger.once(dict(update), enqueue) is False  # an equal copy, as Telegram re-sends it
    assert queued == [update["update_id"]]


def test_another_update_is_queued(ledger: IdempotentUpdateLedger) -> None:
    first, second = telegram_update("text_private"), telegram_update("text_private")
    second["update_id"] += 1
    assert ledger.once(first, lambda: "m1") is True
    assert ledger.once(second, lambda: "m2") is True


def test_a_failed_enqueue_leaves_no_record(ledger: IdempotentUpdateLedger) -> None:
    update = telegram_update("text_private")

    def failing() -> str:
        raise ConnectionError("sqs unreachable")

    with pytest.raises(ConnectionError):
        ledger.once(update, failing)
    assert ledger.once(update, lambda: "m1") is True  # Telegram's retry is queued


def test_a_concurrent_delivery_is_told_to_retry(ledger: IdempotentUpdateLedger) -> None:
    update = telegram_update("text_private")
    entered, release = threading.Event(), threading.Event()

    def slow_enqueue() -> str:
        entered.set()
        release.wait(10)
        return "m1"

    first = threading.Thread(target=ledger.once, args=(update, slow_enqueue))
    first.start()
    assert entered.wait(10)
    try:
        with pytest.raises(UpdateInProgress):
            ledger.once(update, lambda: "m2")
    finally:
        release.set()
        first.join(10)
    assert ledger.once(update, lambda: "m3") is False
