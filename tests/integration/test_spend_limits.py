"""Spending limits on DynamoDB (moto server): everyone's counters beside each chat's, notices
recorded once per turn, and turns running side by side in separate containers (separate meters,
as Lambda runs them) that stop at a limit, passing it by at most one call each."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from decimal import Decimal

import boto3
import pytest

from nanobot_lambda.adapters.aws.clients import dynamodb_client
from nanobot_lambda.adapters.aws.usage import DynamoUsageStore
from nanobot_lambda.core.model import CompletionRequest, ModelReply, Usage
from nanobot_lambda.core.spend import SpendLimitReached, SpendLimits
from nanobot_lambda.core.subjects import subject_in
from nanobot_lambda.core.usage import UsageMeter
from nanobot_lambda.core.usage_counts import Tally
from nanobot_lambda.operator.local.cfn import TemplateContext
from tests.support.aws_requests import TransactionOverlaps
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


def test_chats_side_by_side_never_update_the_same_overall_item(
    resources: TemplateContext,
) -> None:
    # Sixteen chats' calls at once, each a transaction with everyone's counters: with one set of
    # items for everyone (usage#all) they overlapped, which AWS cancels (TransactionConflict);
    # each chat counts in its shard, so none overlap, and the overall figure is their sum.
    table = resources.refs["SessionsTable"]
    overlaps = TransactionOverlaps()  # before the clients: they copy the session's handlers
    try:
        stores = [DynamoUsageStore(table, dynamodb_client(), timezone="UTC") for _ in range(16)]
        start = threading.Barrier(16)
        call = Tally(model_calls=1, cost_usd=CALL_COST)

        def calls(chat: int) -> None:
            start.wait()
            for _ in range(10):
                stores[chat - 1].add(chat, call, NOON, overall=True)

        with ThreadPoolExecutor(max_workers=16) as pool:
            list(pool.map(calls, range(1, 17)))
    finally:
        overlaps.close()
    assert overlaps.transactions == 160
    assert overlaps.on("usage#all") == 0
    spent = stores[0].overall_summary(NOON)
    assert (spent.today.model_calls, spent.total.cost_usd) == (160, 160 * CALL_COST)


def test_everyone_s_items_written_before_the_shards_still_count(
    store: DynamoUsageStore, resources: TemplateContext
) -> None:
    # usage#all was the one partition of everyone's counters: its items are one more shard.
    dynamodb = boto3.client("dynamodb")
    for sort_key in ("day#2026-11-23", "month#2026-11", "total"):
        dynamodb.update_item(
            TableName=resources.refs["SessionsTable"],
            Key={"pk": {"S": "usage#all"}, "sk": {"S": sort_key}},
            UpdateExpression="ADD model_calls :one, cost_usd :cost",
            ExpressionAttributeValues={":one": {"N": "1"}, ":cost": {"N": "0.05"}},
        )
    store.add(7, Tally(model_calls=1, cost_usd=CALL_COST), NOON, overall=True)
    overall = store.overall_summary(NOON)
    assert overall.today == overall.this_month == overall.total
    assert (overall.today.model_calls, overall.today.cost_usd) == (2, Decimal("0.06"))
    periods = store.periods(None)
    assert periods["day#2026-11-23"].cost_usd == periods["total"].cost_usd == Decimal("0.06")
    assert store.chats() == [7]
    # A limit counts them: past it, no call.
    meter = UsageMeter(
        store, RecordingMetrics(), clock=lambda: NOON, limits=SpendLimits(daily=Decimal("0.06"))
    )
    subject = subject_in(8, thread_id=None, person_id=8, owner=None)
    with meter.job(subject) as job, pytest.raises(SpendLimitReached):
        job.metered(PricedModel()).complete(CompletionRequest([], []))
