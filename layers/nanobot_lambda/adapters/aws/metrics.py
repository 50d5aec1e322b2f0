"""CloudWatch metrics in the embedded metric format (Powertools Metrics): the `MetricsPort`
of the functions.

Values are collected during an invocation and printed as one EMF record when the handler's
`@metrics.log_metrics` returns; CloudWatch turns the record into metrics in the namespace
`POWERTOOLS_METRICS_NAMESPACE` (`nanobot` by default) with the dimension `service`. A metric
broken down by something is printed at once as a record of its own with that one extra
dimension, so the main record keeps a single dimension set. Importing this module costs nothing
beyond Powertools' own package, which every handler loads.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from functools import wraps
from typing import ParamSpec, TypeVar

from aws_lambda_powertools import Metrics
from aws_lambda_powertools.metrics import EphemeralMetrics, MetricUnit
from aws_lambda_powertools.metrics.functions import is_metrics_disabled

from nanobot_lambda.core import telemetry

DEFAULT_NAMESPACE = "nanobot"
DEFAULT_SERVICE = "nanobot"  # the `service` dimension, as the template's POWERTOOLS_SERVICE_NAME

# The handlers decorate with `@metrics.log_metrics`, which prints and clears the record.
metrics = Metrics()  # POWERTOOLS_METRICS_NAMESPACE and POWERTOOLS_SERVICE_NAME (template Globals)
metrics.namespace = metrics.namespace or DEFAULT_NAMESPACE
metrics.service = metrics.service or DEFAULT_SERVICE
# An invocation that recorded nothing is normal (a /help, an idle heartbeat): no warning.
warnings.filterwarnings("ignore", "No application metrics to publish", UserWarning)


class EmfMetrics:
    """`MetricsPort` on Powertools Metrics."""

    def __init__(self, target: Metrics) -> None:
        self._metrics = target

    def add(self, name: str, value: float, unit: str = telemetry.COUNT) -> None:
        # Disabled metrics (POWERTOOLS_METRICS_DISABLED, the local CLI) are not even collected:
        # Powertools would keep them and still print them once a metric has 100 values.
        if not is_metrics_disabled():
            self._metrics.add_metric(name=name, unit=MetricUnit(unit), value=value)

    def add_by(self, name: str, dimension: str, key: str, value: float) -> None:
        if is_metrics_disabled():
            return
        record = EphemeralMetrics(namespace=self._metrics.namespace, service=self._metrics.service)
        record.add_dimension(name=dimension, value=key)
        record.add_metric(name=name, unit=MetricUnit.Count, value=value)
        record.flush_metrics()


EMF = EmfMetrics(metrics)

P = ParamSpec("P")
R = TypeVar("R")


def count_errors(kind: telemetry.ErrorKind) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Decorate a handler: an exception it raises is counted as `kind`, then re-raised."""

    def decorate(function: Callable[P, R]) -> Callable[P, R]:
        @wraps(function)
        def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
            try:
                return function(*args, **kwargs)
            except Exception:
                telemetry.error(kind, EMF)
                raise

        return wrapper

    return decorate
