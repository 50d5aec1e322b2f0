"""The metrics port on Powertools: what reaches stdout as CloudWatch EMF records."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from nanobot_lambda.adapters.aws import metrics as emf
from nanobot_lambda.core import telemetry


@pytest.fixture(autouse=True)
def clean_metrics() -> Iterator[None]:
    emf.metrics.clear_metrics()
    yield
    emf.metrics.clear_metrics()


def emitted(capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    return [json.loads(line) for line in capsys.readouterr().out.splitlines()]


def test_named_helpers_fill_one_record_flushed_by_the_handler(
    capsys: pytest.CaptureFixture[str],
) -> None:
    @emf.metrics.log_metrics
    def handler(event: dict[str, Any], context: object) -> str:
        telemetry.turn(1234.5, emf.EMF)
        telemetry.model_usage(
            calls=2,
            prompt_tokens=900,
            completion_tokens=40,
            cached_tokens=300,
            cost_usd=0.002,
            port=emf.EMF,
        )
        telemetry.duplicate_suppressed(emf.EMF)
        telemetry.dlq_sent(emf.EMF)
        return "done"

    assert handler({}, None) == "done"
    (record,) = emitted(capsys)
    (directive,) = record["_aws"]["CloudWatchMetrics"]
    assert directive["Namespace"] == "nanobot" and directive["Dimensions"] == [["service"]]
    assert record["service"] == "nanobot"
    units = {metric["Name"]: metric["Unit"] for metric in directive["Metrics"]}
    assert units["TurnDuration"] == "Milliseconds" and units["Turns"] == "Count"
    figures = {name: record[name] for name in units}
    assert figures == {
        "Turns": [1.0],
        "TurnDuration": [1234.5],
        "ModelCalls": [2.0],
        "PromptTokens": [900.0],
        "CompletionTokens": [40.0],
        "CachedTokens": [300.0],
        "CostUSD": [0.002],
        "DuplicatesSuppressed": [1.0],
        "DlqSends": [1.0],
    }


def test_breakdowns_are_records_of_their_own(capsys: pytest.CaptureFixture[str]) -> None:
    telemetry.tool_calls({"read_file": 2, "grep": 1}, emf.EMF)
    telemetry.error("model_error", emf.EMF)
    records = emitted(capsys)
    dimensions = [(r["_aws"]["CloudWatchMetrics"][0]["Dimensions"], r) for r in records]
    assert [(dims, r.get("tool"), r.get("kind")) for dims, r in dimensions] == [
        ([["tool", "service"]], "grep", None),
        ([["tool", "service"]], "read_file", None),
        ([["kind", "service"]], None, "model_error"),
    ]
    assert [r.get("ToolCalls", r.get("Errors")) for r in records] == [[1.0], [2.0], [1.0]]
    assert emf.metrics.metric_set["ToolCalls"]["Value"] == [3.0]  # the total, flushed later


def test_errors_of_a_decorated_handler_are_counted_and_raised(
    capsys: pytest.CaptureFixture[str],
) -> None:
    @emf.count_errors("scheduler_failed")
    def handler() -> None:
        raise ValueError("broken")

    with pytest.raises(ValueError, match="broken"):
        handler()
    (record,) = emitted(capsys)
    assert record["kind"] == "scheduler_failed" and record["Errors"] == [1.0]


def test_disabled_metrics_are_not_even_collected(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "true")
    for _ in range(150):  # Powertools alone would print at 100 values
        telemetry.turn(10, emf.EMF)
    telemetry.error("turn_failed", emf.EMF)
    assert emf.metrics.metric_set == {}
    assert capsys.readouterr().out == ""
