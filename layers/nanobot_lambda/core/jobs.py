"""What goes on the turn queue: a versioned envelope per job kind (a public contract: jobs
already queued or dead-lettered must still parse).

The queue (`adapters/aws/queue.py`: SQS FIFO) keeps per-chat order (one group per session key)
with cross-chat parallelism, and drops a re-sent job with the same deduplication id within five
minutes.

Which chat, person and scope a job is for is its subject (core/subjects.py), derived for every
kind in one place (`adapters/telegram/subjects.py`, where the queued updates can be parsed).
"""

from __future__ import annotations

from functools import cache
from typing import Annotated, Any, ClassVar, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter


class _Job(BaseModel):
    # defer_build: the webhook only ever builds TelegramUpdateJob's serializer, and only
    # agent_turn builds the parser of every kind (cold-start cost, see bench/cold_import.py).
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)
    # The fields that name a job of its kind beside its chat, never its text: on its log records
    # (functions/agent_turn/kinds.py) and in the dead-letter listing (adapters/aws/dead_letters.py).
    ids: ClassVar[tuple[str, ...]] = ()
    version: Literal[1] = 1


class TelegramUpdateJob(_Job):
    """A Telegram update accepted by the webhook, kept whole so agent_turn sees what it saw."""

    kind: Literal["telegram_update"] = "telegram_update"
    update: dict[str, Any]


class HeartbeatJob(_Job):
    """The heartbeat found tasks in HEARTBEAT.md: run them and report to `chat_id`."""

    kind: Literal["heartbeat"] = "heartbeat"
    chat_id: int
    tasks: str
    fired_at: str


class CronTaskJob(_Job):
    """A scheduled task came due: run `message` as a prompt, report to the owner chat."""

    kind: Literal["cron_task"] = "cron_task"
    ids = ("job_id",)
    job_id: str
    chat_id: int
    thread_id: int | None = None
    name: str
    message: str
    fired_at: str | None = None  # the schedule's time: one firing, one turn
    quiet: bool = False  # report only news: a "nothing to report" answer is not sent


class SubagentJob(_Job):
    """A background task started with the spawn tool: a durable queued job, not a thread."""

    kind: Literal["subagent"] = "subagent"
    ids = ("subagent_id",)
    subagent_id: str
    chat_id: int
    thread_id: int | None = None
    label: str
    task: str


class AnnouncementJob(_Job):
    """A subagent finished: tell the origin chat's agent, which tells the user."""

    kind: Literal["announcement"] = "announcement"
    ids = ("subagent_id",)
    subagent_id: str
    chat_id: int
    thread_id: int | None = None
    label: str
    succeeded: bool
    result: str


class HookEventJob(_Job):
    """A signed event arrived at one of the owner's hooks (core/inbound_events.py): run it as a task
    in the chat the hook was made in. `payload` is the request body as text, cut to
    `inbound_events.PAYLOAD_MAX_BYTES` (`truncated` then), and reaches the model framed as
    untrusted."""

    kind: Literal["hook_event"] = "hook_event"
    ids = ("hook", "delivery_id")
    hook: str
    chat_id: int
    thread_id: int | None = None
    delivery_id: str  # the sender's (X-GitHub-Delivery, X-Hook-Delivery) or the signature's
    event: str | None = None  # what the sender calls it (X-GitHub-Event, X-Hook-Event)
    payload: str
    truncated: bool = False
    received_at: str
    quiet: bool = False  # report only what needs the person, as quiet cron tasks do


StartJob = (
    TelegramUpdateJob | HeartbeatJob | CronTaskJob | SubagentJob | AnnouncementJob | HookEventJob
)


class ContinuationJob(_Job):
    """A turn ran out of Lambda time: go on with `job`'s turn from its journal (part 2, 3…)."""

    kind: Literal["continuation"] = "continuation"
    job: Annotated[StartJob, Field(discriminator="kind")]
    part: int


class ApprovalJob(_Job):
    """A call of `job`'s turn waited for a person (core/approvals.py): they decided, or its
    deadline passed. Goes on with the turn from its journal, in the turn's own queue group."""

    kind: Literal["approval"] = "approval"
    job: Annotated[StartJob, Field(discriminator="kind")]
    approval_id: str
    decision: Literal["once", "always", "deny", "timeout", "moved_on"]
    decided_by: int | None = None  # the approver who pressed; None: nobody (timed out, moved on)
    decided_by_name: str = ""  # their name as Telegram gave it, for the question's edit
    decided_at: str  # ISO 8601, UTC


AnyJob = StartJob | ContinuationJob | ApprovalJob
TurnJob = Annotated[AnyJob, Field(discriminator="kind")]


@cache
def _job_adapter() -> TypeAdapter[AnyJob]:
    return TypeAdapter(TurnJob)


@cache
def _start_job_adapter() -> TypeAdapter[StartJob]:
    return TypeAdapter(Annotated[StartJob, Field(discriminator="kind")])


def parse_start_job(body: str) -> StartJob:
    """A turn's job as an approval keeps it (core/approvals.py); raises ValidationError."""
    return _start_job_adapter().validate_json(body)


def parse_job(body: str) -> AnyJob:
    """Parse a queue message body; raises pydantic.ValidationError for anything else."""
    return _job_adapter().validate_json(body)


class TurnQueue(Protocol):
    """The FIFO queue of jobs for agent_turn, ordered per group."""

    def enqueue(self, job: AnyJob, group: str, dedup_id: str) -> str:
        """Queue `job` in `group`; a second job with the same `dedup_id` (within five minutes)
        is dropped. Returns the message id."""
        ...
