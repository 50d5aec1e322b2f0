"""X-Ray subsegments around model and tool calls, when the function is traced.

agent_turn's handler creates Powertools' Tracer and hands it to `use`. In Lambda with tracing
active, the Tracer also patches boto3, requests and httpx, so every AWS, Telegram and model
provider request appears in the trace by itself; `span` adds a named subsegment around a unit
of work (a model call, a tool call). Without a tracer, or with a disabled one (tests, the local
stack, POWERTOOLS_TRACE_DISABLED=true), `span` does nothing and aws_xray_sdk is never imported.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from aws_lambda_powertools import Tracer

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
