"""A job's context for tests that call the tools or the loop directly (tools/context.py)."""

from __future__ import annotations

from typing import Any

from nanobot_lambda.core.jobs import HeartbeatJob, StartJob
from nanobot_lambda.core.model import ToolCall
from nanobot_lambda.core.ports import Outbox, Workspace
from nanobot_lambda.core.scopes import OWNER, Scope
from nanobot_lambda.core.subjects import Subject
from nanobot_lambda.core.tools import Tool, ToolRegistry
from nanobot_lambda.core.usage import JobMeter, UsageMeter
from nanobot_lambda.tools.context import JobContext, TurnOrigin
from tests.support.fakes import MemoryUsageStore, MemoryWorkspace, RecordingMetrics


def job_context(
    workspace: Workspace | None = None,
    *,
    chat_id: int = 111111111,
    thread_id: int | None = None,
    scope: Scope = OWNER,
    origin: TurnOrigin = "user",
    outbox: Outbox | None = None,
    turn_id: str = "",
    tools: list[Tool[JobContext]] | None = None,
    meter: JobMeter | None = None,
    job: StartJob | None = None,
    **fields: Any,
) -> JobContext:
    """A context for a job in `chat_id` (and `thread_id`), working in `workspace`; with
    `outbox`, a run of its turn."""
    person = chat_id if chat_id > 0 else None
    ctx = JobContext(
        job=job or HeartbeatJob(chat_id=chat_id, tasks="-", fired_at="now"),
        subject=Subject(chat_id, thread_id, person, scope),
        origin=origin,
        workspace=workspace if workspace is not None else MemoryWorkspace(),
        tools=ToolRegistry(tools or []),
        meter=meter or JobMeter(UsageMeter(MemoryUsageStore(), RecordingMetrics()), chat_id),
        **fields,
    )
    return ctx if outbox is None else ctx.with_run(turn_id, outbox)


class JobTools:
    """Tools as one job calls them: a registry and the job's context (`job_context`)."""

    def __init__(
        self, tools: list[Tool[JobContext]], workspace: Workspace | None = None, **context: Any
    ) -> None:
        self.registry = ToolRegistry(tools)
        self.ctx = job_context(workspace, **context)

    def execute(self, call: ToolCall) -> str:
        return self.registry.execute(self.ctx, call)

    def __getattr__(self, name: str) -> Any:  # the registry's definitions, names…
        return getattr(self.registry, name)
