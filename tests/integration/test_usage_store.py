"""Usage per chat in DynamoDB (moto server): atomic ADDs by day, month and in total, folded into
the turn's own transaction, and the meter that counts each job's model calls."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import boto3
import pytest

from nanobot_lambda.adapters.aws.clients import dynamodb_client
from nanobot_lambda.adapters.aws.sessions import DynamoSessionStore
from nanobot_lambda.adapters.aws.usage import DAY_ITEM_DAYS, DynamoUsageStore, tally_from_item
from nanobot_lambda.adapters.telegram.client import TelegramError
from nanobot_lambda.core.model import (
    CompletionRequest,
    ModelReply,
    ToolCall,
    Usage,
    force_tool,
    function_tool,
)
from nanobot_lambda.core.sessions import SessionConflict, TurnRecord
from nanobot_lambda.core.subjects import Subject, subject_in
from nanobot_lambda.core.usage import UsageMeter, usage_report
from nanobot_lambda.core.usage_counts import Tally
from nanobot_lambda.operator.local.cfn import TemplateContext
from tests.support.aws_requests import RequestCounter
from tests.support.fakes import RecordingMetrics, ScriptedModel, outage

CHAT = 111111111
NOON = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
CALL = Tally(
    model_calls=1,
    prompt_tokens=1000,
    completion_tokens=50,
    cached_tokens=400,
    cost_usd=Decimal("0.0015"),
)
TOOLS = [function_tool("list_dir", "List a folder.", {"type": "object", "properties": {}})]


@pytest.fixture
def table(resources: TemplateContext) -> str:
    return resources.refs["SessionsTable"]


@pytest.fixture
def store(table: str) -> DynamoUsageStore:
    return DynamoUsageStore(table, dynamodb_client(), timezone="Europe/Paris")


def item(table: str, sort_key: str, chat: int = CHAT) -> dict[str, Any] | None:
    found = boto3.client("dynamodb").get_item(
        TableName=table, Key={"pk": {"S": f"usage#{chat}"}, "sk": {"S": sort_key}}
    )
    return found.get("Item")


def test_adds_accumulate_by_day_month_and_total(store: DynamoUsageStore, table: str) -> None:
    store.add(CHAT, CALL, NOON)
    store.add(CHAT, replace(CALL, turns=1, tool_calls=2), NOON)
    store.add(CHAT, CALL, datetime(2026, 11, 23, 9, 0, tzinfo=UTC))  # the next day

    twice = CALL + replace(CALL, turns=1, tool_calls=2)
    assert tally_from_item(item(table, "day#2026-11-22")) == twice
    assert tally_from_item(item(table, "day#2026-11-23")) == CALL
    assert tally_from_item(item(table, "month#2026-11")) == twice + CALL
    summary = store.summary(CHAT, NOON)
    assert (summary.day, summary.month) == ("2026-11-22", "2026-11")
    assert summary.today == twice and summary.total == twice + CALL
    assert summary.total.cost_usd == Decimal("0.0045")  # exact: Decimal, not float


def test_costs_of_a_fraction_of_a_microdollar_add_up(store: DynamoUsageStore) -> None:
    """An embedding of a short query costs 3e-7 USD: its sums add up (moto wrote such a sum as
    "3E-7" and failed every later add of the chat: operator/local/moto_server.py mends it)."""
    embedding = Tally(model_calls=1, prompt_tokens=15, cost_usd=Decimal("3E-7"))
    for _ in range(3):
        store.add(CHAT, embedding, NOON)
    assert store.summary(CHAT, NOON).total.cost_usd == Decimal("9E-7")


def test_a_tiny_and_a_huge_price_are_saved_with_the_turn_at_the_first_try(table: str) -> None:
    """An embedding priced 2e-08 USD (litellm's float, as the meter gets it) and a price of
    1e20 USD: each is ADDed by the transaction that saves its turn, which DynamoDB accepts at
    the first request, every number in it written plainly, and the sums are exact to
    DynamoDB's 38 digits (moto read "2e-08" as an int; its mend rounded at Python's 28)."""
    client = dynamodb_client()
    written: list[str] = []
    requests: list[str] = []
    client.meta.events.register(
        "provide-client-params.dynamodb.TransactWriteItems",
        lambda params, **_: written.extend(numbers_in(params)),
    )
    client.meta.events.register(
        "before-send.dynamodb.TransactWriteItems", lambda **_: requests.append("sent")
    )
    store = DynamoUsageStore(table, client, timezone="UTC")
    sessions = DynamoSessionStore(table, client)
    tiny = Tally.of_call(Usage(prompt_tokens=1, cost_usd=2e-08))
    huge = Tally.of_call(Usage(prompt_tokens=1, cost_usd=1e20))
    for turn, tally in enumerate((tiny, tiny, huge, tiny), start=1):
        history = sessions.load("telegram:1", 50)
        sessions.append(
            history,
            [{"role": "user", "content": f"turn {turn}"}],
            turn_id=f"t{turn}",
            also=store.updates(CHAT, tally, NOON, overall=True),
        )
        assert len(requests) == turn  # one request per save: none cancelled and tried again
    assert {"0.00000002", "100000000000000000000"} <= set(written)
    assert not [number for number in written if "e" in number.lower()]
    exact = Decimal("100000000000000000000.00000006")  # 29 digits
    assert store.summary(CHAT, NOON).total.cost_usd == exact
    assert store.overall_summary(NOON).today.cost_usd == exact
    assert (item(table, "total") or {})["cost_usd"] == {"N": str(exact)}


def numbers_in(value: Any) -> list[str]:
    """Every number attribute value ("N", "NS") in a request's parameters."""
    if isinstance(value, list):
        return [number for entry in value for number in numbers_in(entry)]
    if not isinstance(value, dict):
        return []
    found = [value["N"]] if isinstance(value.get("N"), str) else list(value.get("NS", []))
    return found + [
        n for key, entry in value.items() if key not in ("N", "NS") for n in numbers_in(entry)
    ]


def test_days_follow_the_users_time_zone_and_expire(store: DynamoUsageStore, table: str) -> None:
    late = datetime(2026, 11, 30, 23, 30, tzinfo=UTC)  # already December 1st in Paris
    store.add(CHAT, CALL, late)
    day = item(table, "day#2026-12-01")
    assert day is not None and item(table, "month#2026-12") is not None
    expected = late.timestamp() + DAY_ITEM_DAYS * 86400
    assert int(day["expires_at"]["N"]) == int(expected)
    assert "expires_at" not in (item(table, "total") or {})  # months and totals are kept


def test_concurrent_adds_lose_nothing(store: DynamoUsageStore) -> None:
    # Each add is one transaction of ADDs, which AWS (and the local moto server) applies
    # atomically; a transaction conflict is tried again.
    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(lambda _: store.add(CHAT, CALL, NOON), range(16)))
    assert store.summary(CHAT, NOON).total.model_calls == 16


def test_usage_is_saved_with_the_turn_or_not_at_all(table: str) -> None:
    counter = RequestCounter()  # before the clients: they copy the session's handlers
    store = DynamoUsageStore(table, dynamodb_client(), timezone="UTC")
    sessions = DynamoSessionStore(table, dynamodb_client())
    history = sessions.load("telegram:1", 50)
    stale = sessions.load("telegram:1", 50)
    turn = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    record = TurnRecord(at=NOON.isoformat(), turn_id="t1", models=("m",), model_calls=1)
    counter.reset()
    try:
        usage = store.updates(CHAT, CALL, NOON, by_model={"m": CALL})
        sessions.append(history, turn, turn_id="t1", also=usage, record=record)
        # The usage, the model's month and the turn's record: in the one transaction.
        assert counter.operations("dynamodb") == {"TransactWriteItems": 1}
    finally:
        counter.close()
    assert store.summary(CHAT, NOON).total == CALL
    assert store.periods(CHAT)["by-model#2026-11#m"] == CALL
    assert sessions.load("telegram:1", 1).turn_log == (record,)

    with pytest.raises(SessionConflict):  # another writer saved first: nothing of this is kept
        sessions.append(stale, turn, also=store.updates(CHAT, CALL, NOON))
    assert store.summary(CHAT, NOON).total == CALL


def test_chats_and_the_operators_report(store: DynamoUsageStore, table: str) -> None:
    assert usage_report(store, None, NOON) == "No usage recorded yet."
    DynamoSessionStore(table, dynamodb_client()).append(
        DynamoSessionStore(table, dynamodb_client()).load("telegram:5", 5),
        [{"role": "user", "content": "a session is not usage"}],
    )
    store.add(CHAT, replace(CALL, turns=1), NOON)
    store.add(222, replace(CALL, turns=1, cost_usd=Decimal(0), unpriced_calls=1), NOON)
    assert store.chats() == [222, CHAT]
    report = usage_report(store, None, NOON).split("\n\n")
    assert report[0].startswith("chat 222\nToday (2026-11-22): 1 turns, 1 model calls")
    assert report[0].endswith("cost unknown (no price for this model)")
    assert report[1].endswith("400 cached), 50 out · $0.0015")
    assert usage_report(store, CHAT, NOON) == report[1]


# -- the meter -------------------------------------------------------------------------------


def usage(prompt: int, completion: int, cached: int = 0, cost: float | None = 0.001) -> Usage:
    return Usage(prompt, completion, cached, cost)


def subject(chat: int = CHAT) -> Subject:
    """What agent_turn derives for a job in `chat` (adapters/telegram/subjects.py)."""
    return subject_in(chat, thread_id=None, person_id=chat, owner=None)


def meter_with(store: DynamoUsageStore) -> tuple[UsageMeter, RecordingMetrics]:
    recorded = RecordingMetrics()
    return UsageMeter(store, recorded, clock=lambda: NOON), recorded


def test_a_saved_turn_writes_its_usage_once(table: str) -> None:
    counter = RequestCounter()
    store = DynamoUsageStore(table, dynamodb_client(), timezone="Europe/Paris")
    meter, recorded = meter_with(store)
    scripted = ScriptedModel(
        ModelReply(None, (ToolCall("c1", "list_dir", "{}"),), usage=usage(900, 40, 300)),
        ModelReply("Done.", usage=usage(1000, 20, 800)),
    )
    sessions = DynamoSessionStore(table, dynamodb_client())
    try:
        with meter.job(subject()) as job:
            model = job.metered(scripted)
            model.complete(CompletionRequest([], TOOLS))
            model.complete(CompletionRequest([], TOOLS))
            with job.folded() as items:
                sessions.append(sessions.load("telegram:1", 5), [{"role": "user"}], also=items)
    finally:
        counter.close()
    assert counter.operations("dynamodb") == {"Query": 1, "TransactWriteItems": 1}
    total = store.summary(CHAT, NOON).total
    assert (total.turns, total.model_calls, total.tool_calls) == (1, 2, 1)
    assert (total.prompt_tokens, total.completion_tokens, total.cached_tokens) == (1900, 60, 1100)
    assert recorded.named("Turns") == [1] and recorded.named("ModelCalls") == [2]
    assert recorded.named("PromptTokens") == [1900] and recorded.named("CachedTokens") == [1100]
    assert recorded.named("CostUSD") == [pytest.approx(0.002)]
    assert ("ToolCalls", "tool", "list_dir", 1) in recorded.added_by


def test_a_continued_turn_is_one_turn(store: DynamoUsageStore) -> None:
    meter, _ = meter_with(store)
    scripted = ScriptedModel(
        ModelReply("part 1", usage=usage(10, 1)), ModelReply("2", usage=usage(10, 1))
    )
    for continued in (False, True):  # the turn, then its continuation
        with meter.job(subject(), continued=continued) as job:
            job.metered(scripted).complete(CompletionRequest([], TOOLS))
    total = store.summary(CHAT, NOON).total
    assert (total.turns, total.model_calls) == (1, 2)


def test_jobs_without_a_save_write_at_their_end(store: DynamoUsageStore) -> None:
    meter, recorded = meter_with(store)
    decision = ModelReply(None, (ToolCall("d", "heartbeat_decision", "{}"),), usage=usage(50, 5))
    with meter.job(subject()) as job:  # the heartbeat's
        forced = CompletionRequest([], [], tool_choice=force_tool("heartbeat_decision"))
        job.metered(ScriptedModel(decision)).complete(forced)
    total = store.summary(CHAT, NOON).total
    # A forced decision is a model call, not a turn, and its "tool call" is an answer.
    assert (total.turns, total.model_calls, total.tool_calls) == (0, 1, 0)
    assert recorded.named("Turns") == [] and recorded.named("ModelCalls") == [1]


def test_unknown_tools_and_unpriced_calls(store: DynamoUsageStore) -> None:
    meter, recorded = meter_with(store)
    invented = ToolCall("c1", "rm_rf_" + "x" * 40, "{}")  # not offered: one bounded name
    scripted = ScriptedModel(
        ModelReply(None, (invented,), usage=usage(10, 1, cost=None)),
        ModelReply("ok", usage=usage(10, 1)),
    )
    with meter.job(subject()) as job:  # a background task's
        model = job.metered(scripted)
        model.complete(CompletionRequest([], TOOLS))
        model.complete(CompletionRequest([], TOOLS))
    total = store.summary(CHAT, NOON).total
    assert total.unpriced_calls == 1 and total.cost_known
    assert ("ToolCalls", "tool", "unknown", 1) in recorded.added_by


def test_failures_are_counted_by_kind(store: DynamoUsageStore) -> None:
    meter, recorded = meter_with(store)
    scripted = ScriptedModel(outage(), ModelReply("ok", usage=usage(10, 1)))
    with pytest.raises(TelegramError), meter.job(subject()) as job:
        model = job.metered(scripted)
        with pytest.raises(Exception, match="APIConnectionError"):
            model.complete(CompletionRequest([], []))
        model.complete(CompletionRequest([], []))
        raise TelegramError("sendMessage", 500, "Internal Server Error")
    with pytest.raises(RuntimeError), meter.job(subject()):
        raise RuntimeError("boom")
    assert [(kind, value) for _, _, kind, value in recorded.added_by] == [
        ("model_error", 1),
        ("telegram_error", 1),
        ("turn_failed", 1),
    ]
    # The failed turn's model call was paid for: it is recorded all the same.
    assert store.summary(CHAT, NOON).total.model_calls == 1


def test_a_job_that_used_nothing_writes_nothing(table: str) -> None:
    counter = RequestCounter()
    meter, _ = meter_with(DynamoUsageStore(table, dynamodb_client(), timezone="UTC"))
    try:
        with meter.job(subject()):
            pass
    finally:
        counter.close()
    assert counter.total("dynamodb") == 0


def test_the_usage_command(
    store: DynamoUsageStore,
    table: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from nanobot_lambda.operator.cli import main

    monkeypatch.delenv("SESSIONS_TABLE", raising=False)
    assert main(["usage"]) == 2
    assert "give --stack NAME, or set SESSIONS_TABLE" in capsys.readouterr().err

    monkeypatch.setenv("SESSIONS_TABLE", table)
    monkeypatch.setenv("TIMEZONE", "Europe/Paris")
    store.add(CHAT, replace(CALL, turns=1), datetime.now(UTC))
    assert main(["usage", "--chat", str(CHAT)]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[0] == f"chat {CHAT}"
    assert [line.split(":")[0].split(" (")[0] for line in printed[1:]] == [
        "Today",
        "This month",
        "All time",
        "Reactions to answers",  # core/reactions_and_edits.py: with --chat, none yet here
    ]
    assert all(line.endswith("1,000 in (400 cached), 50 out · $0.0015") for line in printed[1:4])
    assert printed[4] == "Reactions to answers: none yet"

    monkeypatch.setenv("SESSIONS_TABLE", "no-such-table")
    assert main(["usage"]) == 1
    assert capsys.readouterr().err.startswith("error: cannot read usage:")
