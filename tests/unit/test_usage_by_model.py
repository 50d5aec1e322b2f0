"""The meter's counts per model and its record of a turn (core/usage.py): each model that
answered counted on its own for the month, whether written with the turn's save or at once
under a spending limit; the record says what the turn used, never its text."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

from nanobot_lambda.core.model import CompletionRequest, ModelReply, ToolCall, Usage
from nanobot_lambda.core.sessions import TurnRecord
from nanobot_lambda.core.spend import SpendLimits
from nanobot_lambda.core.subjects import subject_in
from nanobot_lambda.core.usage import UsageMeter
from nanobot_lambda.core.usage_counts import MODEL_NAME_MAX
from tests.support.fakes import MemoryUsageStore, RecordingMetrics, ScriptedModel

NOON = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
TOOL = {"type": "function", "function": {"name": "read_file", "parameters": {}}}


def reply(model: str | None, cost: float | None, *tools: str) -> ModelReply:
    calls = tuple(ToolCall(f"call_{n}", name, "{}") for n, name in enumerate(tools))
    return ModelReply("ok", tool_calls=calls, usage=Usage(100, 10, 0, cost), model=model)


def run_job(meter: UsageMeter, *replies: ModelReply) -> TurnRecord:
    with meter.job(subject_in(5, thread_id=None, person_id=5, owner=1)) as job:
        model = job.metered(ScriptedModel(*replies))
        for _ in replies:
            model.complete(CompletionRequest([], [TOOL]))
        with job.folded() as writes:
            for write in writes:
                write["apply"]()
        return job.turn_record()


def test_each_model_s_month_is_counted_apart() -> None:
    store = MemoryUsageStore()
    meter = UsageMeter(store, RecordingMetrics(), clock=lambda: NOON)
    run_job(
        meter,
        reply("gpt-4o-mini", 0.001, "read_file"),
        reply("claude-haiku", 0.004),
        reply("gpt-4o-mini", 0.001),
        reply(None, 0.002),  # a model that does not say its name: the chat's figures only
    )
    periods = store.periods(5)
    assert periods["by-model#2026-11#gpt-4o-mini"].model_calls == 2
    assert periods["by-model#2026-11#gpt-4o-mini"].cost_usd == Decimal("0.002")
    assert periods["by-model#2026-11#claude-haiku"].cost_usd == Decimal("0.004")
    assert periods["month#2026-11"].model_calls == 4
    assert periods["month#2026-11"].cost_usd == Decimal("0.008")


def test_under_a_limit_each_call_s_model_is_written_at_once() -> None:
    store = MemoryUsageStore()
    limits = SpendLimits(person_daily=Decimal(1))
    meter = UsageMeter(store, RecordingMetrics(), clock=lambda: NOON, limits=limits)
    long_name = "x" * (MODEL_NAME_MAX + 50)
    with meter.job(subject_in(5, thread_id=None, person_id=5, owner=1)) as job:
        job.metered(ScriptedModel(reply(long_name, 0.01))).complete(CompletionRequest([], []))
        assert store.periods(5)[f"by-model#2026-11#{'x' * MODEL_NAME_MAX}"].model_calls == 1


def test_a_turn_s_record_says_what_it_used() -> None:
    meter = UsageMeter(MemoryUsageStore(), RecordingMetrics(), clock=lambda: NOON)
    record = run_job(
        meter,
        reply("gpt-4o-mini", 0.001, "read_file", "web_search"),
        reply("claude-haiku", 0.002),
    )
    assert record == TurnRecord(
        at="2026-11-29T12:00:00+00:00",
        models=("gpt-4o-mini", "claude-haiku"),
        model_calls=2,
        prompt_tokens=200,
        completion_tokens=20,
        cost_usd=Decimal("0.003"),
        tools=("read_file", "unknown"),  # a tool it was not offered is `unknown`
    )
    assert TurnRecord.from_json(record.to_json()) == record
    unpriced = run_job(meter, reply("local", None))
    assert unpriced.cost_usd is None and unpriced.tools == ()
    assert TurnRecord.from_json('{"not": "a record"}') is None


def test_usage_says_this_month_per_model_in_a_line() -> None:
    store = MemoryUsageStore()
    meter = UsageMeter(store, RecordingMetrics(), clock=lambda: NOON)
    assert "by model" not in meter.report(5)
    run_job(meter, reply("gpt-4o-mini", 0.001), reply("claude-haiku", 0.004), reply("local", None))
    line = meter.report(5).splitlines()[-1]
    assert line == (
        "This month by model: claude-haiku $0.0040 (1 calls) · gpt-4o-mini $0.0010 (1 calls)"
        " · local no price (1 calls)"
    )
