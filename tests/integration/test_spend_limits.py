"""Spending limits on DynamoDB (moto server): everyone's counters beside each chat's, notices
recorded once per turn, and turns running side by side in separate containers (separate meters,
as Lambda runs them) that stop at a limit, passing it by at most one call each."""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from decimal import Decimal

import pytest

from nanobot_lambda.adapters.aws.clients import dynamodb_client
from nanobot_lambda.adapters.aws.usage import DynamoUsageStore
from nanobot_lambda.core.model import CompletionRequest, ModelReply, Usage
from nanobot_lambda.core.spend import SpendLimitReached, SpendLimits
from nanobot_lambda.core.subjects import subject_in
from nanobot_lambda.core.usage import UsageMeter
from nanobot_lambda.core.usage_counts import Tally
from nanobot_lambda.operator.local.cfn import TemplateContext
from tests.support.fakes import RecordingMetrics

NOON = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)
CALL_COST = Decimal("0.01")


@pytest.fixture
def store(resources: TemplateContext) -> DynamoUsageStore:
    return DynamoUsageStore(
        resources.refs["SessionsTable"], dynamodb_client(), timezone="Europe/Paris"
    )


def test_everyone_s_counters_add_up_every_chat_and_are_not_a_chat(
    store: DynamoUsageStore,
) -> None:
    call = Tally(model_calls=1, cost_usd=CALL_COST)
    store.add(1, call, NOON, overall=True)
    store.add(2, call, NOON, overall=True)
    store.add(3, call, NOON)  # no limit needed everyone's counters then
    overall = store.overall_summary(NOON)
    assert (overall.today.model_calls, overall.this_month.cost_usd) == (2, Decimal("0.02"))
    assert overall.total.model_calls == 2
    assert store.summary(1, NOON).today.cost_usd == CALL_COST
    assert store.chats() == [1, 2, 3]


def test_a_notice_is_first_once_and_again_for_the_same_turn(store: DynamoUsageStore) -> None:
    key = "chat#day#2026-11-23"
    assert store.first_notice(1, key, "update-1", NOON) is True
    assert store.first_notice(1, key, "update-1", NOON) is True  # the same turn, retried
    assert store.first_notice(1, key, "update-2", NOON) is False
    assert store.first_notice(2, key, "update-2", NOON) is True  # another chat
    assert store.first_notice(1, "chat#day#2026-11-24", "update-3", NOON) is True
    # Notices share the chat's partition with its counters and do not disturb them.
    store.add(1, Tally(model_calls=1), NOON)
    assert store.summary(1, NOON).today.model_calls == 1


class PricedModel:
    """Answers every call at CALL_COST."""

    def complete(self, request: CompletionRequest) -> ModelReply:
        return ModelReply("ok", usage=Usage(100, 10, 0, float(CALL_COST)))


def test_turns_side_by_side_stop_at_everyone_s_limit(
    resources: TemplateContext,
) -> None:
    limit = Decimal("0.10")
    table = resources.refs["SessionsTable"]
    calls: list[int] = []
    lock = threading.Lock()
    start = threading.Barrier(3)

    def turn(chat: int) -> None:
        # A container of its own: its own client, store and meter.
        store = DynamoUsageStore(table, dynamodb_client(), timezone="Europe/Paris")
        meter = UsageMeter(
            store, RecordingMetrics(), clock=lambda: NOON, limits=SpendLimits(daily=limit)
        )
        subject = subject_in(chat, thread_id=None, person_id=chat, owner=None)
        start.wait()
        with meter.job(subject) as job:
            model = job.metered(PricedModel())
            for _ in range(50):
                try:
                    model.complete(CompletionRequest([], []))
                except SpendLimitReached:
                    return
                with lock:
                    calls.append(chat)

    threads = [threading.Thread(target=turn, args=(chat,)) for chat in (1, 2, 3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    spent = DynamoUsageStore(table, dynamodb_client(), timezone="Europe/Paris").overall_summary(
        NOON
    )
    assert spent.today.model_calls == len(calls)
    # Every turn stopped; together they passed the limit by at most one call each.
    assert limit <= spent.today.cost_usd <= limit + 3 * CALL_COST
    assert len(set(calls)) >= 2  # they did run side by side
