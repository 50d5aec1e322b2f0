"""Telemetry the core reports: metrics through a `MetricsPort`, and trace subsegments.

Metrics: the named helpers (`turn`, `error("model_error")`, `duplicate_suppressed()`…) are what
callers use, each given the port (`adapters/aws/metrics.py`'s `EMF` in the functions, a
recorder in unit tests). A metric broken down by something (tool calls by tool, errors by kind)
carries one extra dimension, whose values are bounded: tool names the model was offered, and the
error kinds below.

Tracing: agent_turn's handler creates Powertools' Tracer and hands it to `use`. In Lambda with
tracing active, the Tracer also patches boto3, requests and httpx, so every AWS, Telegram and
model provider request appears in the trace by itself; `span` adds a named subsegment around a
unit of work (a model call, a tool call). Without a tracer, or with a disabled one (tests, the
local stack, POWERTOOLS_TRACE_DISABLED=true), `span` does nothing and aws_xray_sdk is never
imported.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from typing import Any, Literal, Protocol

ErrorKind = Literal[
    "model_error",  # a model call failed after litellm's retries
    "telegram_error",  # a turn failed sending to Telegram (SQS retries it)
    "turn_failed",  # a turn failed for any other reason (SQS retries it)
    "scheduler_failed",  # a scheduler invocation failed (EventBridge Scheduler retries it)
]
COUNT = "Count"
MILLISECONDS = "Milliseconds"
NO_UNIT = "None"


def turn(duration_ms: float, port: MetricsPort) -> None:
    """A job that ran the agent (a Telegram message, a scheduled or background task…)."""
    port.add("Turns", 1)
    port.add("TurnDuration", duration_ms, MILLISECONDS)


def model_usage(
    *,
    calls: int,
    prompt_tokens: int,
    completion_tokens: int,
    cached_tokens: int,
    cost_usd: float | None,
    port: MetricsPort,
) -> None:
    """The model calls of one job, summed; cost only when litellm knew the model's price."""
    port.add("ModelCalls", calls)
    port.add("PromptTokens", prompt_tokens)
    port.add("CompletionTokens", completion_tokens)
    port.add("CachedTokens", cached_tokens)
    if cost_usd is not None:
        port.add("CostUSD", cost_usd, NO_UNIT)


def tool_calls(by_tool: Mapping[str, int], port: MetricsPort) -> None:
    """Tool calls of one job: the total, and one count per tool (dimension `tool`)."""
    if not by_tool:
        return
    port.add("ToolCalls", sum(by_tool.values()))
    for tool, count in sorted(by_tool.items()):
        port.add_by("ToolCalls", "tool", tool, count)


def error(kind: ErrorKind, port: MetricsPort) -> None:
    """One error, counted as `Errors` with the dimension `kind`."""
    port.add_by("Errors", "kind", kind, 1)


def duplicate_suppressed(port: MetricsPort) -> None:
    """A delivery recognised as a duplicate and not acted on a second time."""
    port.add("DuplicatesSuppressed", 1)


def dlq_sent(port: MetricsPort) -> None:
    """A job given up on and moved to the dead-letter queue."""
    port.add("DlqSends", 1)


# -- tracing -------------------------------------------------------------------------------


class _Subsegment(Protocol):
    def put_annotation(self, key: str, value: str) -> Any: ...


class _TracerProvider(Protocol):
    def in_subsegment(self, name: str) -> AbstractContextManager[_Subsegment]: ...


class Tracer(Protocol):
    """What `span` uses of Powertools' Tracer."""

    @property
    def disabled(self) -> bool: ...

    @property
    def provider(self) -> _TracerProvider: ...


_tracer: Tracer | None = None


def use(tracer: Tracer) -> None:
    global _tracer
    _tracer = None if tracer.disabled else tracer


@contextmanager
def span(name: str, **annotations: str) -> Iterator[None]:
    """A subsegment `## <name>` with these annotations (searchable in X-Ray)."""
    if _tracer is None:
        yield
        return
    with _tracer.provider.in_subsegment(f"## {name}") as subsegment:
        for key, value in annotations.items():
            subsegment.put_annotation(key, value)
        yield


class MetricsPort(Protocol):
    def add(self, name: str, value: float, unit: str = "Count") -> None:
        """Add a value to the invocation's record."""
        ...

    def add_by(self, name: str, dimension: str, key: str, value: float) -> None:
        """Emit a count with one extra dimension (`dimension`=`key`)."""
        ...
