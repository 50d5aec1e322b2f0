"""Usage, metrics and logs through the whole stack: each turn's tokens are recorded for its
chat and /usage shows them summed; the functions' CloudWatch metrics (EMF) carry the same
figures, errors by kind, suppressed duplicates and dead-letter sends; log records carry the
job's ids."""

from __future__ import annotations

import io
import json
import logging
import re
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest

from nanobot_lambda.adapters.aws.usage import DynamoUsageStore
from nanobot_lambda.core import texts
from nanobot_lambda.core.usage_counts import Tally
from nanobot_lambda.operator.local.stack import LocalStack
from tests.conftest import StackFactory
from tests.support.faults import BotApiFaults, text_is
from tests.support.scripted_model import ScriptedModelServer


def say(stack: LocalStack, text: str) -> str:
    stack.post_update(stack.text_update(text))
    stack.process_queue()
    return stack.bot_api.messages[-1].plain_text


def usage_store(stack: LocalStack) -> DynamoUsageStore:
    table = stack.template.refs["SessionsTable"]
    return DynamoUsageStore(table, boto3.client("dynamodb"), timezone="UTC")


def total(stack: LocalStack) -> Tally:
    return usage_store(stack).summary(stack.user.id, datetime.now(UTC)).total


def emf_records(output: str) -> list[dict[str, Any]]:
    records = [json.loads(line) for line in output.splitlines() if line.startswith('{"_aws"')]
    return [record for record in records if record["_aws"]["CloudWatchMetrics"]]


def values(records: list[dict[str, Any]], name: str, **dimensions: str) -> list[float]:
    """Every value of metric `name` in records with exactly these extra dimensions."""
    found: list[float] = []
    for record in records:
        (directive,) = record["_aws"]["CloudWatchMetrics"]
        if set(directive["Dimensions"][0]) != {"service", *dimensions}:
            continue
        if any(record.get(key) != value for key, value in dimensions.items()):
            continue
        if any(metric["Name"] == name for metric in directive["Metrics"]):
            value = record[name]
            found.extend(value if isinstance(value, list) else [value])
    return found


def test_usage_shows_two_turns_summed(stack: LocalStack, model_server: ScriptedModelServer) -> None:
    model_server.response_model = "gpt-4o-mini"  # a model litellm has a price for
    model_server.call_tool(
        "list_dir", {}, prompt_tokens=1000, completion_tokens=50, cached_tokens=600
    )
    model_server.reply("Your workspace holds notes.", prompt_tokens=1200, completion_tokens=30)
    model_server.reply("Hello again.", prompt_tokens=800, completion_tokens=40, cached_tokens=700)
    say(stack, "what is in my workspace?")
    say(stack, "hi")

    recorded = total(stack)
    assert (recorded.turns, recorded.model_calls, recorded.tool_calls) == (2, 3, 1)
    assert (recorded.prompt_tokens, recorded.completion_tokens) == (3000, 120)
    assert recorded.cached_tokens == 1300
    assert recorded.unpriced_calls == 0 and recorded.cost_usd > 0

    answer, reactions = say(stack, "/usage").rsplit("\n\n", 1)
    assert answer.startswith("📊 Usage in this chat")
    assert reactions == texts.load("feedback_none")  # the reactions to its answers: none
    lines = {line.split(":")[0].split(" (")[0]: line for line in answer.splitlines()[2:]}
    expected = (
        "2 turns, 3 model calls, 1 tool calls · tokens: 3,000 in (1,300 cached), 120 out · "
        f"${recorded.cost_usd:.4f}"
    )
    by_model = lines.pop("This month by model")  # the model as the settings name it
    assert by_model == f"This month by model: openai/scripted ${recorded.cost_usd:.4f} (3 calls)"
    assert set(lines) == {"Today", "This month", "All time"}
    assert all(line.endswith(expected) for line in lines.values())
    assert len(model_server.requests) == 3  # /usage asked no model


def test_usage_without_a_price_and_before_any_turn(
    stack: LocalStack, model_server: ScriptedModelServer
) -> None:
    assert say(stack, "/usage").count(texts.load("usage_none")) == 3
    model_server.reply("Hi.")  # openai/scripted: litellm knows no price
    say(stack, "hello")
    assert texts.load("usage_cost_unknown") in say(stack, "/usage")


def test_a_turn_emits_its_metrics(
    stack: LocalStack, model_server: ScriptedModelServer, capsys: pytest.CaptureFixture[str]
) -> None:
    model_server.call_tool("list_dir", {}, prompt_tokens=500, completion_tokens=10)
    model_server.call_tool("grep", {"pattern": "tea"}, prompt_tokens=600, completion_tokens=20)
    model_server.reply("Found it.", prompt_tokens=700, completion_tokens=30, cached_tokens=400)
    capsys.readouterr()
    say(stack, "find tea in my notes")

    records = emf_records(capsys.readouterr().out)
    assert {record["_aws"]["CloudWatchMetrics"][0]["Namespace"] for record in records} == {
        "nanobot"
    }
    assert values(records, "Turns") == [1]
    assert values(records, "ModelCalls") == [3]
    assert values(records, "PromptTokens") == [1800]
    assert values(records, "CompletionTokens") == [60]
    assert values(records, "CachedTokens") == [400]
    assert values(records, "CostUSD") == []  # no price known for the scripted model
    assert values(records, "ToolCalls") == [2]
    assert values(records, "ToolCalls", tool="list_dir") == [1]
    assert values(records, "ToolCalls", tool="grep") == [1]
    (duration,) = values(records, "TurnDuration")
    assert 0 < duration < 60_000


def test_a_model_failure_is_counted_as_an_error(
    stack: LocalStack, model_server: ScriptedModelServer, capsys: pytest.CaptureFixture[str]
) -> None:
    model_server.fail(500, times=3)  # the first try and litellm's two retries
    capsys.readouterr()
    assert say(stack, "hello") == texts.load("model_error")
    records = emf_records(capsys.readouterr().out)
    assert values(records, "Errors", kind="model_error") == [1]
    assert values(records, "Turns") == []  # no answer, no turn
    assert total(stack).empty  # a failed call has no usage to record


def test_duplicates_and_dead_letters_are_counted(
    stack: LocalStack, model_server: ScriptedModelServer, capsys: pytest.CaptureFixture[str]
) -> None:
    model_server.reply("Once.")
    update = stack.text_update("hello")
    stack.post_update(update)
    stack.process_queue()
    capsys.readouterr()
    stack.post_update(update)  # Telegram sends it again
    assert values(emf_records(capsys.readouterr().out), "DuplicatesSuppressed") == [1]

    BotApiFaults(stack.bot_api).fail("sendMessage", 500, times=-1, when=text_is("Refused."))
    for _ in range(3):
        model_server.reply("Refused.")
    say(stack, "this one cannot be answered")
    records = emf_records(capsys.readouterr().out)
    assert values(records, "Errors", kind="telegram_error") == [1, 1, 1]  # every attempt
    assert values(records, "DlqSends") == [1]  # the last one


def test_consolidation_is_counted_for_the_chat(
    stack_factory: StackFactory, model_server: ScriptedModelServer
) -> None:
    stack = stack_factory(HistoryWindow="4")
    for answer in ("One.", "Two."):
        model_server.reply(answer)
    model_server.reply("Three.", prompt_tokens=100, completion_tokens=20)
    model_server.call_tool(
        "save_memory",
        {"history_entry": "[2026-11-22 10:00] Counting.", "memory_update": "# Memory\n"},
        prompt_tokens=2000,
        completion_tokens=300,
    )
    for text in ("one", "two", "three"):  # 6 messages > 4: the third turn consolidates
        say(stack, text)
    recorded = total(stack)
    assert (recorded.turns, recorded.model_calls, recorded.tool_calls) == (3, 4, 0)
    assert recorded.prompt_tokens == 2300 and recorded.completion_tokens == 360


def test_log_records_of_a_turn_carry_its_ids(
    stack: LocalStack, model_server: ScriptedModelServer
) -> None:
    # The functions' JSON output, formatted as records are emitted (the keys live in the
    # Powertools formatter only while the job is processed).
    output = io.StringIO()
    json_lines = logging.StreamHandler(output)
    json_lines.setFormatter(stack.handlers["agent_turn"].logger.registered_formatter)
    package = logging.getLogger("nanobot_lambda")
    package.addHandler(json_lines)
    try:
        model_server.call_tool("list_dir", {}).reply("Hi.")
        update = stack.text_update("hello there")
        stack.post_update(update)
        stack.process_queue()
    finally:
        package.removeHandler(json_lines)
    logged = [json.loads(line) for line in output.getvalue().splitlines()]
    (tool_call,) = [line for line in logged if line["message"] == "tool call"]
    assert tool_call["update_id"] == update["update_id"]
    assert tool_call["chat_id"] == stack.user.id
    assert tool_call["job_kind"] == "telegram_update"
    assert re.fullmatch(r"[0-9a-f-]{36}", tool_call["turn_id"])  # the SQS message id
    assert all("hello there" not in json.dumps(line) for line in logged)
    # Removed once the job is done: the webhook's records of the next update lack them.
    stack.post_update(stack.text_update("/help"))
    assert "turn_id" not in stack.handlers["agent_turn"].logger.registered_formatter.log_format
