"""Trace subsegments around model and tool calls, when a tracer is in use."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, ClassVar

import pytest

from nanobot_lambda.core import telemetry
from nanobot_lambda.core.errors import ModelError
from nanobot_lambda.core.model import CompletionRequest, ModelReply, ToolCall
from nanobot_lambda.core.tools import Tool
from nanobot_lambda.core.usage import JobMeter, MeteredModel, UsageMeter
from tests.support.fakes import MemoryUsageStore, RecordingMetrics, ScriptedModel, outage
from tests.support.job_context import JobTools
from tests.unit.test_scheduler import service


class Subsegment:
    def __init__(self, name: str) -> None:
        self.name = name
        self.annotations: dict[str, str] = {}
        self.failed = False

    def put_annotation(self, key: str, value: str) -> None:
        self.annotations[key] = value


class RecordingProvider:
    """What Powertools' Tracer.provider offers `span`: in_subsegment, as a context manager."""

    def __init__(self) -> None:
        self.subsegments: list[Subsegment] = []

    @contextmanager
    def in_subsegment(self, name: str) -> Iterator[Subsegment]:
        subsegment = Subsegment(name)
        self.subsegments.append(subsegment)
        try:
            yield subsegment
        except Exception:
            subsegment.failed = True
            raise


@dataclass(frozen=True)
class StandInTracer:
    """What `telemetry.use` reads of Powertools' Tracer."""

    disabled: bool
    provider: RecordingProvider


@pytest.fixture
def provider() -> Iterator[RecordingProvider]:
    recording = RecordingProvider()
    telemetry.use(StandInTracer(disabled=False, provider=recording))
    yield recording
    telemetry.use(StandInTracer(disabled=True, provider=recording))


class Echo(Tool):
    name = "echo"
    description = "Echo."
    parameters: ClassVar[dict[str, Any]] = {"type": "object", "properties": {}}

    def run(self, ctx: Any, /, **arguments: Any) -> str:
        return "echoed"


def test_model_and_tool_calls_get_subsegments(provider: RecordingProvider) -> None:
    meter = JobMeter(UsageMeter(MemoryUsageStore(), RecordingMetrics()), 1)  # never finished
    model = MeteredModel(ScriptedModel(ModelReply("hi"), outage()), meter)
    model.complete(CompletionRequest([], []))
    with pytest.raises(ModelError):
        model.complete(CompletionRequest([], []))
    registry = JobTools([Echo()])
    assert registry.execute(ToolCall("c1", "echo", "{}")) == "echoed"
    registry.execute(ToolCall("c2", "made_up", "{}"))
    assert [(s.name, s.annotations, s.failed) for s in provider.subsegments] == [
        ("## model", {}, False),
        ("## model", {}, True),
        ("## tool", {"tool": "echo"}, False),
        ("## tool", {"tool": "unknown"}, False),
    ]


def test_a_disabled_tracer_traces_nothing() -> None:
    unused = RecordingProvider()
    telemetry.use(StandInTracer(disabled=True, provider=unused))
    assert JobTools([Echo()]).execute(ToolCall("c1", "echo", "{}")) == "echoed"
    assert unused.subsegments == []


def test_scheduled_events_get_a_subsegment_by_kind(provider: RecordingProvider) -> None:
    scheduler, _ = service({}, chat_id=None)
    assert scheduler.handle({"kind": "heartbeat"}) == {"status": "idle"}
    assert scheduler.handle({"kind": "nonsense"}) == {"status": "ignored"}
    assert [(s.name, s.annotations) for s in provider.subsegments] == [
        ("## scheduled", {"kind": "heartbeat"}),
    ]
