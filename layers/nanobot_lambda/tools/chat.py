"""Tools that act for the chat a turn belongs to: cron, message, reply_buttons, send_file,
spawn.

Which chat and topic, what kind of turn and the run's outbox are the job's context's
(tools/context.py), given to each call; the tools themselves hold only their stores and rules.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import PurePosixPath
from typing import Annotated, Any, Literal

from pydantic import Field

from nanobot_lambda.core.allowlist import AllowList
from nanobot_lambda.core.cron import CronJob, remove_job
from nanobot_lambda.core.errors import ChannelError, ToolError
from nanobot_lambda.core.jobs import SubagentJob
from nanobot_lambda.core.outgoing import MAX_CAPTION_CHARS, MAX_UPLOAD_BYTES, OutgoingFile, kind_for
from nanobot_lambda.core.ports import JobStore, Schedules, TurnQueue, Workspace
from nanobot_lambda.core.schedules import ScheduleError, build_schedule, next_run
from nanobot_lambda.core.tool_schema import ToolArguments
from nanobot_lambda.core.tools import Tool
from nanobot_lambda.tools.context import JobContext
from nanobot_lambda.tools.files import tool_path

MAX_BUTTONS = 8
MAX_BUTTON_CHARS = 40  # longer labels are cut on phones anyway


class CronTool(Tool[JobContext]):
    name = "cron"
    description = (
        "Schedule reminders (text sent at the time) and tasks (you run the message as a "
        "prompt at the time). Read skills/cron/SKILL.md before first use."
    )
    mutates = True

    class Arguments(ToolArguments):
        action: Literal["add", "list", "remove"]
        message: str | None = None
        kind: Literal["reminder", "task"] | None = None
        every_seconds: int | None = None
        cron_expr: str | None = None
        tz: str | None = None
        at: str | None = None
        name: str | None = Field(None, max_length=100)
        job_id: str | None = None
        # The cron skill says more (quiet tasks compare with the earlier runs).
        quiet: bool | None = Field(
            None, description="Tasks only: report only what is new or needs attention."
        )

    def __init__(
        self,
        store: JobStore,
        schedules: Schedules,
        *,
        timezone: str,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self._store = store
        self._schedules = schedules
        self._timezone = timezone
        self._clock = clock

    def run(self, ctx: JobContext, /, action: str, **arguments: Any) -> str:
        if action == "add":
            return self._add(ctx, **arguments)
        if action == "list":
            return self._list(ctx)
        return self._remove(ctx, arguments.get("job_id"))

    def _add(
        self,
        ctx: JobContext,
        message: str | None = None,
        kind: str = "reminder",
        every_seconds: int | None = None,
        cron_expr: str | None = None,
        tz: str | None = None,
        at: str | None = None,
        name: str | None = None,
        job_id: str | None = None,
        quiet: bool = False,
    ) -> str:
        if ctx.origin != "user":
            raise ToolError("a scheduled or background turn cannot create new jobs")
        if not message or not message.strip():
            raise ToolError("message is required: the reminder text, or the task to run")
        if quiet and kind != "task":
            raise ToolError("quiet is for tasks only: a reminder's text is always sent")
        now = self._clock()
        try:
            spec = build_schedule(
                every_seconds=every_seconds,
                cron_expr=cron_expr,
                tz=tz,
                at=at,
                default_tz=self._timezone,
                now=now,
            )
        except ScheduleError as error:
            raise ToolError(str(error)) from None
        job_id = ctx.call_key()
        earlier = self._store.get(ctx.chat_id, job_id)
        if earlier is not None:  # made by an earlier run of this very call
            self._schedules.create(earlier)  # in case that run died before it: else a no-op
            return self._added(earlier)
        job = CronJob(
            job_id=job_id,
            chat_id=ctx.chat_id,
            thread_id=ctx.thread_id,
            kind="task" if kind == "task" else "reminder",
            message=message.strip(),
            name=(name or message).strip()[:100],
            expression=spec.expression,
            timezone=spec.timezone,
            description=spec.description,
            one_time=spec.one_time,
            created_at=now.astimezone(UTC).isoformat(timespec="seconds"),
            starts_at=(now + timedelta(seconds=every_seconds))
            .astimezone(UTC)
            .isoformat(timespec="seconds")
            if every_seconds
            else None,
            quiet=quiet,
        )
        self._store.put(job)
        try:
            self._schedules.create(job)
        except Exception:
            self._store.delete(job.chat_id, job.job_id)  # no job without a schedule
            raise
        return self._added(job)

    def _added(self, job: CronJob) -> str:
        return (
            f"Added {job.kind} '{job.name}' (id {job.job_id}){_quiet(job)}: "
            f"{job.description}; next run {self._next(job)}."
        )

    def _list(self, ctx: JobContext) -> str:
        jobs = self._store.for_chat(ctx.chat_id)
        if not jobs:
            return "No scheduled jobs in this chat."
        return "\n".join(
            f"{job.job_id}: {job.kind} '{job.name}'{_quiet(job)}, {job.description}, "
            f"next run {self._next(job)}"
            + (f", last run {job.last_run} ({job.last_status})" if job.last_run else "")
            for job in jobs
        )

    def _remove(self, ctx: JobContext, job_id: object) -> str:
        if not isinstance(job_id, str) or not job_id:
            raise ToolError("job_id is required to remove a job (see action=list)")
        job = self._store.get(ctx.chat_id, job_id)
        if job is None:
            raise ToolError(f"no job with id {job_id} in this chat (see action=list)")
        remove_job(self._store, self._schedules, job)
        return f"Removed {job.kind} '{job.name}' (id {job.job_id})."

    def _next(self, job: CronJob) -> str:
        anchor = datetime.fromisoformat(job.starts_at or job.created_at)
        upcoming = next_run((job.expression, job.timezone), self._clock(), anchor=anchor)
        return upcoming.strftime("%Y-%m-%d %H:%M UTC") if upcoming else "none (done)"


def _quiet(job: CronJob) -> str:
    return " (quiet: reports only what is new or needs attention)" if job.quiet else ""


# Buttons' labels: a few, short.
Buttons = Annotated[
    list[Annotated[str, Field(min_length=1, max_length=MAX_BUTTON_CHARS)]],
    Field(min_length=1, max_length=MAX_BUTTONS),
]


class MessageTool(Tool[JobContext]):
    name = "message"
    description = (
        "Send a message now, to this chat or (chat_id) another allowed chat; useful mid-task. "
        "Your final answer is sent anyway. `buttons`: choices shown under it; a press comes "
        "back to you as the user's next message."
    )

    class Arguments(ToolArguments):
        content: str = Field(min_length=1)
        chat_id: int | None = None
        buttons: Buttons | None = None

    def __init__(self, allow_list: AllowList, owner: int | None) -> None:
        self._allow_list = allow_list
        self._owner = owner

    def run(
        self,
        ctx: JobContext,
        /,
        content: str,
        chat_id: int | None = None,
        buttons: list[str] | None = None,
    ) -> str:
        outbox = ctx.run_outbox()
        here = ctx.chat_id
        target = here if chat_id is None else chat_id
        if target != here and self._owner is not None and here != self._owner:
            # Another person's or a group's assistant (core/scopes.py) speaks in its chat only.
            raise ToolError("from this chat, messages go to this chat only")
        if target != here and ctx.origin == "hook":
            # An event's payload comes from outside: what it says is told in its hook's chat
            # only, never carried by a prompt-injected model to someone else.
            raise ToolError("an event's task sends messages to its own chat only")
        if target != here and not (target in self._allow_list.ids or self._allow_list.everyone):
            raise ToolError(f"chat {target} is not an allowed chat; only ALLOW_FROM ids are")
        thread = ctx.thread_id if target == here else None
        outbox.send(target, content, thread, buttons=_labels(buttons))
        ctx.notes.sent.append((target, content.strip()))
        return f"Sent to chat {target}."


class ReplyButtonsTool(Tool[JobContext]):
    name = "reply_buttons"
    description = (
        "Show buttons under your final answer, e.g. a short list of choices or yes/no; the "
        "user's press comes back to you as their next message. Call it before you answer."
    )

    class Arguments(ToolArguments):
        buttons: Buttons

    def run(self, ctx: JobContext, /, buttons: list[str]) -> str:
        ctx.run_outbox()  # only in a turn that answers
        ctx.notes.reply_buttons = _labels(buttons)
        return f"Your final answer will show {len(ctx.notes.reply_buttons)} buttons."


def _labels(buttons: list[str] | None) -> tuple[str, ...]:
    """Button texts as Telegram shows them: one line each, no duplicates."""
    labels = (" ".join(text.split()) for text in buttons or ())
    return tuple(dict.fromkeys(label for label in labels if label))


class SendFileTool(Tool[JobContext]):
    name = "send_file"
    description = (
        "Send a workspace file to this chat now: an image as a photo, .ogg/.opus as a voice "
        "note, .mp3/.m4a as audio, anything else as a document (at most 50 MB). Sent once."
    )

    class Arguments(ToolArguments):
        path: str = Field(min_length=1)
        caption: str | None = Field(None, max_length=MAX_CAPTION_CHARS)

    def run(self, ctx: JobContext, /, path: str, caption: str | None = None) -> str:
        outbox, workspace = ctx.run_outbox(), ctx.workspace
        path = tool_path(path)
        size = _size(workspace, path)
        if size is not None and size > MAX_UPLOAD_BYTES:
            raise ToolError(
                f"{path} is {size / 1_048_576:.1f} MB; Telegram takes files of at most 50 MB "
                "from a bot. Send a smaller file (compress it, or split it)."
            )
        file = workspace.read(path)
        if file is None or size is None:
            raise ToolError(f"file not found: {path}. Use list_dir to see what exists.")
        name = PurePosixPath(path).name
        kind = kind_for(name, len(file.data))
        outgoing = OutgoingFile(name, file.data, kind, caption.strip() if caption else None)
        try:
            outbox.send_file(ctx.chat_id, outgoing, ctx.thread_id)
        except ChannelError as error:
            if kind != "photo" or error.status != 400:
                raise ToolError(f"Telegram refused {path}: {error}") from None
            # An image Telegram cannot show as a photo (its size, its format) still goes as a file.
            kind = "document"
            outbox.send_file(ctx.chat_id, replace(outgoing, kind=kind), ctx.thread_id)
        return f"Sent {path} to the chat as a {kind}."


def _size(workspace: Workspace, path: str) -> int | None:
    folder = path.rsplit("/", 1)[0] if "/" in path else ""
    for entry in workspace.list_files(folder):
        if entry.path == path and not entry.is_dir:
            return entry.size
    return None


class SpawnTool(Tool[JobContext]):
    name = "spawn"
    description = (
        "Start a background task that runs on its own (with file tools) and reports back "
        "when done. Returns at once with an id."
    )

    class Arguments(ToolArguments):
        task: str = Field(min_length=1)
        label: str | None = Field(None, max_length=60)

    def __init__(
        self,
        queue: TurnQueue,
        running: Callable[[int], int],
        *,
        max_running: int,
        on_spawn: Callable[[SubagentJob], None],
    ) -> None:
        self._queue = queue
        self._running = running
        self._max_running = max_running
        self._on_spawn = on_spawn

    def run(self, ctx: JobContext, /, task: str, label: str | None = None) -> str:
        if ctx.origin == "subagent":
            raise ToolError("a background task cannot start other background tasks")
        if self._running(ctx.chat_id) >= self._max_running:
            raise ToolError(
                f"{self._max_running} background tasks are already running in this chat; "
                "wait for one to finish"
            )
        job = SubagentJob(
            subagent_id=ctx.call_key(),
            chat_id=ctx.chat_id,
            thread_id=ctx.thread_id,
            label=(label or task).strip()[:60],
            task=task.strip(),
        )
        self._on_spawn(job)
        # Its own message group: it runs beside the chat, not in the chat's queue order.
        self._queue.enqueue(job, group=f"subagent:{job.subagent_id}", dedup_id=job.subagent_id)
        return (
            f"Started background task {job.subagent_id} ('{job.label}'); "
            "you will be told when it ends."
        )
