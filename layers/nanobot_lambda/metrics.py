"""CloudWatch metrics in the embedded metric format (Powertools Metrics).

Values are collected during an invocation and printed as one EMF record when the handler's
`@metrics.log_metrics` returns; CloudWatch turns the record into metrics in the namespace
`POWERTOOLS_METRICS_NAMESPACE` (`nanobot` by default) with the dimension `service`. A metric
broken down by something (tool calls by tool, errors by kind) is printed at once as a record of
its own with that one extra dimension, so the main record keeps a single dimension set. Those
dimension values are bounded: tool names the model was offered, and the error kinds below.

The core records through a `MetricsPort` (`EMF` in the functions, a recorder in unit tests);
the named helpers (`duplicate_suppressed()`, `error("model_error")`…) are what callers use.
Importing this module costs nothing beyond Powertools' own package, which every handler loads.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from functools import wraps
from typing import Literal, ParamSpec, Protocol, TypeVar

from aws_lambda_powertools import Metrics
from aws_lambda_powertools.metrics import EphemeralMetrics, MetricUnit
from aws_lambda_powertools.metrics.functions import is_metrics_disabled

DEFAULT_NAMESPACE = "nanobot"
DEFAULT_SERVICE = "nanobot"  # the `service` dimension, as the template's POWERTOOLS_SERVICE_NAME

ErrorKind = Literal[
    "model_error",  # a model call failed after litellm's retries
    "telegram_error",  # a turn failed sending to Telegram (SQS retries it)
    "turn_failed",  # a turn failed for any other reason (SQS retries it)
    "scheduler_failed",  # a scheduler invocation failed (EventBridge Scheduler retries it)
]

# The handlers decorate with `@metrics.log_metrics`, which prints and clears the record.
metrics = Metrics()  # POWERTOOLS_METRICS_NAMESPACE and POWERTOOLS_SERVICE_NAME (template Globals)
metrics.namespace = metrics.namespace or DEFAULT_NAMESPACE
metrics.service = metrics.service or DEFAULT_SERVICE
# An invocation that recorded nothing is normal (a /help, an idle heartbeat): no warning.
warnings.filterwarnings("ignore", "No application metrics to publish", UserWarning)


class MetricsPort(Protocol):
    def add(self, name: str, value: float, unit: MetricUnit = MetricUnit.Count) -> None:
        """Add a value to the invocation's record."""
        ...

    def add_by(self, name: str, dimension: str, key: str, value: float) -> None:
        """Emit a count with one extra dimension (`dimension`=`key`)."""
        ...


class EmfMetrics:
    """`MetricsPort` on Powertools Metrics."""

    def __init__(self, target: Metrics) -> None:
        self._metrics = target

    def add(self, name: str, value: float, unit: MetricUnit = MetricUnit.Count) -> None:
        # Disabled metrics (POWERTOOLS_METRICS_DISABLED, the local CLI) are not even collected:
        # Powertools would keep them and still print them once a metric has 100 values.
        if not is_metrics_disabled():
            self._metrics.add_metric(name=name, unit=unit, value=value)

    def add_by(self, name: str, dimension: str, key: str, value: float) -> None:
        if is_metrics_disabled():
            return
        record = EphemeralMetrics(namespace=self._metrics.namespace, service=self._metrics.service)
        record.add_dimension(name=dimension, value=key)
        record.add_metric(name=name, unit=MetricUnit.Count, value=value)
        record.flush_metrics()


EMF = EmfMetrics(metrics)


def turn(duration_ms: float, port: MetricsPort = EMF) -> None:
    """A job that ran the agent (a Telegram message, a scheduled or background task…)."""
    port.add("Turns", 1)
    port.add("TurnDuration", duration_ms, MetricUnit.Milliseconds)


def model_usage(
    *,
    calls: int,
    prompt_tokens: int,
    completion_tokens: int,
    cached_tokens: int,
    cost_usd: float | None,
    port: MetricsPort = EMF,
) -> None:
    """The model calls of one job, summed; cost only when litellm knew the model's price."""
    port.add("ModelCalls", calls)
    port.add("PromptTokens", prompt_tokens)
    port.add("CompletionTokens", completion_tokens)
    port.add("CachedTokens", cached_tokens)
    if cost_usd is not None:
        port.add("CostUSD", cost_usd, MetricUnit.NoUnit)


def tool_calls(by_tool: Mapping[str, int], port: MetricsPort = EMF) -> None:
    """Tool calls of one job: the total, and one count per tool (dimension `tool`)."""
    if not by_tool:
        return
    port.add("ToolCalls", sum(by_tool.values()))
    for tool, count in sorted(by_tool.items()):
        port.add_by("ToolCalls", "tool", tool, count)


def error(kind: ErrorKind, port: MetricsPort = EMF) -> None:
    """One error, counted as `Errors` with the dimension `kind`."""
    port.add_by("Errors", "kind", kind, 1)


def duplicate_suppressed(port: MetricsPort = EMF) -> None:
    """A delivery recognised as a duplicate and not acted on a second time."""
    port.add("DuplicatesSuppressed", 1)


def dlq_sent(port: MetricsPort = EMF) -> None:
    """A job given up on and moved to the dead-letter queue."""
    port.add("DlqSends", 1)


P = ParamSpec("P")
R = TypeVar("R")


def count_errors(kind: ErrorKind) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Decorate a handler: an exception it raises is counted as `kind`, then re-raised."""

    def decorate(function: Callable[P, R]) -> Callable[P, R]:
        @wraps(function)
        def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
            try:
                return function(*args, **kwargs)
            except Exception:
                error(kind)
                raise

        return wrapper

    return decorate
