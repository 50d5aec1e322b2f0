"""In-memory implementations of the ports, for fast unit tests (no network)."""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
import time
from collections import deque
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo

from nanobot_lambda.adapters.aws.jobs import SUBAGENT_RECORD_SECONDS
from nanobot_lambda.adapters.aws.sessions import ITEM_LIMIT_BYTES
from nanobot_lambda.adapters.telegram.formatting import html_to_plain_text, render_messages
from nanobot_lambda.core.albums import AlbumRecord
from nanobot_lambda.core.approvals import (
    Approval,
    ApprovalBook,
    ApprovalDeadlines,
    Permission,
)
from nanobot_lambda.core.cron import CronJob
from nanobot_lambda.core.errors import ChannelError, ModelError, NotFound, StorageError
from nanobot_lambda.core.inbound_events import DELIVERIES_KEPT, Delivery, Hook
from nanobot_lambda.core.invites import Invite
from nanobot_lambda.core.jobs import AnyJob
from nanobot_lambda.core.journal import Aside, Shown, TurnProgress
from nanobot_lambda.core.memory_versions import FileVersion, VersionedFiles
from nanobot_lambda.core.model import (
    CompletionRequest,
    Embeddings,
    ModelReply,
    Speech,
    ToolCall,
)
from nanobot_lambda.core.outgoing import Button, OutgoingFile
from nanobot_lambda.core.pairing import Asker, AskRecord, PairingCode, Person
from nanobot_lambda.core.ports import (
    Channel,
    ChatModel,
    Embedder,
    JobStore,
    MediaSource,
    MetricsPort,
    RecallIndexObjects,
    Schedules,
    SessionStore,
    StopFlags,
    StoredWrite,
    TurnJournal,
    TurnQueue,
    UpdateLedger,
    UsageStore,
    Workspace,
)
from nanobot_lambda.core.reactions_and_edits import Edit, Reaction
from nanobot_lambda.core.recall_index import StoredIndex
from nanobot_lambda.core.scopes import Scope
from nanobot_lambda.core.sessions import (
    RECENT_TURNS,
    ChatPreferences,
    Message,
    SessionConflict,
    SessionHistory,
    TurnRecord,
    align_to_user_turn,
)
from nanobot_lambda.core.skill_requirements import RequirementsSeen
from nanobot_lambda.core.usage_counts import (
    MODEL_NAME_MAX,
    MODEL_PREFIX,
    ByModel,
    Tally,
    UsageSummary,
)
from nanobot_lambda.core.workspace import Entry, WorkspaceFile, WriteConflict


class MemoryWorkspace:
    """A Workspace in a dict, with ETags and conditional writes like S3's."""

    def __init__(self, files: dict[str, str | bytes] | None = None) -> None:
        self.files: dict[str, bytes] = {
            path: data.encode() if isinstance(data, str) else data
            for path, data in (files or {}).items()
        }
        self.reads = 0
        self.writes = 0
        self.conflicts_to_inject = 0
        self.history: dict[str, list[bytes]] = {path: [data] for path, data in self.files.items()}
        self.restores: dict[tuple[str, str], str] = {}  # (path, version): the restore's request

    @staticmethod
    def _etag(data: bytes) -> str:
        return '"' + hashlib.md5(data, usedforsecurity=False).hexdigest() + '"'

    def refresh(self) -> None:
        pass

    def read(self, path: str, *, fresh: bool = False) -> WorkspaceFile | None:
        self.reads += 1
        data = self.files.get(path)
        return None if data is None else WorkspaceFile(path, data, self._etag(data))

    def write(
        self, path: str, data: bytes, *, if_match: str | None = None, if_none_match: bool = False
    ) -> str:
        current = self.files.get(path)
        if if_none_match and current is not None:
            raise WriteConflict(path)
        if if_match is not None:
            if self.conflicts_to_inject:
                self.conflicts_to_inject -= 1
                self.files[path] = (current or b"") + b"\nconcurrent line"
                raise WriteConflict(path)
            if current is None:  # S3: 404 NoSuchKey, the version named is gone
                raise NotFound(path)
            if self._etag(current) != if_match:
                raise WriteConflict(path)
        self.writes += 1
        self.files[path] = data
        self.history.setdefault(path, []).append(data)
        return self._etag(data)

    def versions(self, path: str, limit: int) -> list[FileVersion]:
        """Every write is a version (the seeded files' first), like a versioned bucket's."""
        kept = self.history.get(path) or ([self.files[path]] if path in self.files else [])
        start = datetime(2026, 1, 1, tzinfo=UTC)
        listed = [
            FileVersion(f"v{n}", start + timedelta(hours=n), len(data))
            for n, data in enumerate(kept)
        ]
        return listed[::-1][:limit]

    def restored_by(self, path: str, version_id: str) -> str | None:
        return self.restores.get((path, version_id))

    def write_restored(self, path: str, data: bytes, *, request: str, if_match: str | None) -> None:
        self.write(path, data, if_match=if_match, if_none_match=if_match is None)
        self.restores[(path, f"v{len(self.history[path]) - 1}")] = request

    def read_version(self, path: str, version_id: str) -> bytes | None:
        kept = self.history.get(path) or ([self.files[path]] if path in self.files else [])
        index = int(version_id[1:])
        return kept[index] if index < len(kept) else None

    def list_dir(self, path: str) -> list[Entry]:
        prefix = f"{path}/" if path else ""
        folders: dict[str, Entry] = {}
        files: list[Entry] = []
        for name, data in sorted(self.files.items()):
            if not name.startswith(prefix):
                continue
            rest = name[len(prefix) :]
            if "/" in rest:
                folder = prefix + rest.split("/", 1)[0]
                folders[folder] = Entry(folder, 0, True)
            else:
                files.append(Entry(name, len(data), False))
        return [*folders.values(), *files]

    def list_files(self, path: str) -> list[Entry]:
        prefix = f"{path}/" if path else ""
        return [
            Entry(name, len(data), False)
            for name, data in sorted(self.files.items())
            if name.startswith(prefix)
        ]


class MemoryRecallIndexObjects:
    """Recall index objects in a dict, with ETags, conditional reads and writes like S3's."""

    def __init__(self) -> None:
        self.objects: dict[Scope, bytes] = {}
        self.gets = 0
        self.bodies_sent = 0  # reads that returned the object's bytes (not "unchanged")
        self.puts = 0
        # Called once before the next put's condition is checked: another writer's turn.
        self.before_put: Callable[[], None] | None = None
        self._etags: dict[int, tuple[bytes, str]] = {}

    def etag(self, data: bytes) -> str:
        known = self._etags.get(id(data))
        if known is None or known[0] is not data:  # S3 keeps an object's ETag: no rehashing
            known = (data, '"' + hashlib.md5(data, usedforsecurity=False).hexdigest() + '"')
            self._etags[id(data)] = known
        return known[1]

    def get(self, scope: Scope, *, unless_etag: str | None = None) -> StoredIndex | None:
        self.gets += 1
        data = self.objects.get(scope)
        if data is None:
            return None
        if unless_etag == self.etag(data):
            return StoredIndex(unless_etag, None)
        self.bodies_sent += 1
        return StoredIndex(self.etag(data), data)

    def put(self, scope: Scope, data: bytes, *, if_match: str | None) -> str:
        if self.before_put is not None:
            hook, self.before_put = self.before_put, None
            hook()
        current = self.objects.get(scope)
        if (if_match is None and current is not None) or (
            if_match is not None and (current is None or self.etag(current) != if_match)
        ):
            raise WriteConflict(f"recall index {scope.name}")
        self.puts += 1
        self.objects[scope] = data
        return self.etag(data)


class StandInEmbedder:
    """The stand-in embedding of tests/support/embedding_server.py, in process; `failures`
    makes the next calls raise ModelError."""

    def __init__(self, model: str = "stand-in", cost_per_call: float | None = 0.0001) -> None:
        self.model = model
        self.cost_per_call = cost_per_call
        self.calls: list[list[str]] = []
        self.failures = 0

    def embed(self, texts: Sequence[str]) -> Embeddings:
        from tests.support.embedding_server import embed

        self.calls.append(list(texts))
        if self.failures:
            self.failures -= 1
            raise ModelError("embedding failed (stand-in, status 500)")
        vectors = tuple(tuple(embed(text)) for text in texts)
        return Embeddings(vectors, self.model, self.cost_per_call)


class ApproxTokenCounter:
    """A TokenCounter for unit tests: a token per four characters of the request's JSON."""

    def __init__(self, context_window: int = 128_000) -> None:
        self.context_window = context_window

    def count(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None
    ) -> int:
        return len(json.dumps([messages, tools or []], ensure_ascii=False)) // 4


class RecordingSpeaker:
    """A Speaker that records what it is asked to read, and answers audio (or `fail_with`)."""

    AUDIO = b"OggS\x00\x02fake opus"

    def __init__(self, cost_usd: float | None = None) -> None:
        self.spoken: list[str] = []
        self.fail_with: Exception | None = None
        self.cost_usd = cost_usd

    def speak(self, text: str) -> Speech:
        self.spoken.append(text)
        if self.fail_with is not None:
            raise self.fail_with
        return Speech(self.AUDIO, self.cost_usd)


class ScriptedModel:
    """A ChatModel that replays replies and records every request (fails on an extra call)."""

    def __init__(self, *replies: ModelReply | Exception) -> None:
        self.replies: deque[ModelReply | Exception] = deque(replies)
        self.requests: list[tuple[list[dict[str, Any]], list[dict[str, Any]]]] = []
        self.tool_choices: list[Any] = []
        self.timeouts: list[float | None] = []
        self.reasoning_efforts: list[str | None] = []

    def complete(self, request: CompletionRequest) -> ModelReply:
        self.requests.append(([dict(message) for message in request.messages], request.tools))
        self.tool_choices.append(request.tool_choice)
        self.timeouts.append(request.timeout)
        self.reasoning_efforts.append(request.reasoning_effort)
        if not self.replies:
            raise AssertionError("the model was called more often than scripted")
        reply = self.replies.popleft()
        if isinstance(reply, Exception):
            raise reply
        if request.on_text is not None and reply.content:
            request.on_text(reply.content)  # the whole text in one piece, as a very fast stream
        return reply


def text(content: str) -> ModelReply:
    return ModelReply(content=content)


def tool(
    name: str, arguments: str, call_id: str = "call_1", content: str | None = None
) -> ModelReply:
    return ModelReply(content=content, tool_calls=(ToolCall(call_id, name, arguments),))


def outage() -> ModelError:
    return ModelError("APIConnectionError (status None)")


class MemoryJobStore:
    """JobStore semantics in memory: per-chat jobs, claimable firings, subagent records."""

    def __init__(self) -> None:
        self.jobs: dict[tuple[int, str], CronJob] = {}
        self.fired: dict[tuple[int, str], str] = {}
        self.firing_parts: dict[tuple[int, str, str], int] = {}
        self.subagents: dict[tuple[int, str], int] = {}
        self.private_chat: int | None = None
        self.heartbeat_is_paused = False
        self.requirements: RequirementsSeen | None = None

    def put(self, job: CronJob) -> None:
        if (job.chat_id, job.job_id) in self.jobs:  # DynamoDB: the put's condition fails
            raise StorageError("DynamoJobStore.put: ConditionalCheckFailedException")
        self.jobs[(job.chat_id, job.job_id)] = job

    def get(self, chat_id: int, job_id: str) -> CronJob | None:
        return self.jobs.get((chat_id, job_id))

    def for_chat(self, chat_id: int) -> list[CronJob]:
        return sorted(
            (job for (chat, _), job in self.jobs.items() if chat == chat_id),
            key=lambda job: job.created_at,
        )

    def all_jobs(self) -> list[CronJob]:
        return sorted(self.jobs.values(), key=lambda job: (job.chat_id, job.created_at))

    def delete(self, chat_id: int, job_id: str) -> bool:
        self.fired.pop((chat_id, job_id), None)
        return self.jobs.pop((chat_id, job_id), None) is not None

    def claim_firing(self, chat_id: int, job_id: str, scheduled_time: str) -> int | None:
        key = (chat_id, job_id)
        if key not in self.jobs or self.fired.get(key) == scheduled_time:
            return None
        self.fired[key] = scheduled_time
        return self.firing_parts.get((chat_id, job_id, scheduled_time), 0)

    def record_firing_part(self, chat_id: int, job_id: str, scheduled_time: str, part: int) -> None:
        if self.fired.get((chat_id, job_id)) != scheduled_time:  # not this firing's claim
            raise StorageError("DynamoJobStore.record_firing_part: ConditionalCheckFailedException")
        self.firing_parts[(chat_id, job_id, scheduled_time)] = part

    def release_firing(self, chat_id: int, job_id: str, scheduled_time: str) -> None:
        if self.fired.get((chat_id, job_id)) == scheduled_time:
            del self.fired[(chat_id, job_id)]

    def set_paused(self, chat_id: int, job_id: str, paused: bool) -> bool:
        key = (chat_id, job_id)
        if key not in self.jobs:
            return False
        self.jobs[key] = replace(self.jobs[key], paused=paused)
        return True

    def record_run(self, job: CronJob, *, at: str, status: str) -> None:
        stored = self.jobs.get((job.chat_id, job.job_id))
        if stored is not None:  # DynamoDB: `paused` is an attribute the run does not rewrite
            self.jobs[(job.chat_id, job.job_id)] = replace(
                job, last_run=at, last_status=status, paused=stored.paused
            )

    def start_subagent(self, chat_id: int, subagent_id: str, *, now: int) -> None:
        self.subagents[(chat_id, subagent_id)] = now + SUBAGENT_RECORD_SECONDS  # its expiry

    def finish_subagent(self, chat_id: int, subagent_id: str) -> None:
        self.subagents.pop((chat_id, subagent_id), None)

    def running_subagents(self, chat_id: int, *, now: int) -> int:
        return sum(
            1 for (chat, _), expires in self.subagents.items() if chat == chat_id and expires > now
        )

    def remember_private_chat(self, chat_id: int) -> None:
        self.private_chat = chat_id

    def latest_private_chat(self) -> int | None:
        return self.private_chat

    def heartbeat_paused(self) -> bool:
        return self.heartbeat_is_paused

    def set_heartbeat_paused(self, paused: bool) -> None:
        self.heartbeat_is_paused = paused

    def record_requirements_seen(self, seen: RequirementsSeen) -> None:
        self.requirements = seen

    def requirements_seen(self) -> RequirementsSeen | None:
        return self.requirements


class MemorySchedules:
    """ScheduleClient in memory: the schedules that exist, by job id."""

    def __init__(self, fail: bool = False) -> None:
        self.schedules: dict[str, CronJob] = {}
        self.fail = fail

    def create(self, job: CronJob) -> None:
        if self.fail:
            raise RuntimeError("scheduler unavailable")
        self.schedules[job.job_id] = job

    def delete(self, job: CronJob) -> None:
        self.schedules.pop(job.job_id, None)


class MemoryApprovalDeadlines:
    """ApprovalDeadlines in memory: each approval's deadline, by its id."""

    def __init__(self) -> None:
        self.deadlines: dict[str, datetime] = {}

    def set(self, approval_id: str, at: datetime) -> None:
        self.deadlines.setdefault(approval_id, at)


class MemoryApprovalBook:
    """ApprovalBook in memory, as adapters/aws/approvals.py keeps it."""

    def __init__(self) -> None:
        self.approvals: dict[str, Approval] = {}
        self.standing: dict[tuple[str, str], Permission] = {}

    def put(self, approval: Approval) -> None:
        self.approvals.setdefault(approval.approval_id, approval)

    def get(self, approval_id: str) -> Approval | None:
        return self.approvals.get(approval_id)

    def note_message(self, approval_id: str, message_id: int) -> None:
        self.approvals[approval_id] = dataclasses.replace(
            self.approvals[approval_id], message_id=message_id
        )

    def allow_always(self, permission: Permission) -> None:
        self.standing[(permission.scope, permission.action)] = permission

    def allowed(self, scope: str, action: str) -> bool:
        return (scope, action) in self.standing

    def permissions(self) -> list[Permission]:
        return [self.standing[key] for key in sorted(self.standing)]

    def revoke(self, scope: str, action: str) -> None:
        self.standing.pop((scope, action), None)


class RecordingChannel:
    """The Channel (and MediaSource) port, recording every message sent as (chat_id, text,
    thread_id); messages are split into parts as Telegram's are (the real renderer)."""

    def __init__(self) -> None:
        self.sent: list[tuple[int, str, int | None]] = []
        self.typing_in: list[int] = []
        self.fail_with: ChannelError | None = None  # raised by the next send
        self.fail_on: str | None = None  # the next send of a part starting with this fails
        self.drafts: list[tuple[int, int, str]] = []  # (chat_id, draft_id, html)
        self.fail_drafts_with: ChannelError | None = None  # raised by every draft
        self.files: dict[str, bytes] = {}  # file id -> bytes, for get_file and download
        self.files_sent: list[tuple[int, OutgoingFile, int | None]] = []  # send_file
        # message id -> its buttons, until removed
        self.keyboards: dict[int, tuple[Button, ...]] = {}
        self.edits: list[tuple[int, int, str]] = []  # (chat_id, message_id, text) edit_text
        self.buttons_removed: list[tuple[int, int]] = []  # (chat_id, message_id) asked
        self.web_apps: dict[int, tuple[str, str]] = {}  # message id -> its Mini App button
        self.me = BotUser(id=7000000001, username="nano_lambda_bot")

    def message_parts(self, text: str) -> list[str]:
        return render_messages(text)

    def send_part(
        self,
        chat_id: int,
        part: str,
        *,
        thread_id: int | None = None,
        buttons: Sequence[Button] = (),
    ) -> int:
        if self.fail_with is not None:
            error, self.fail_with = self.fail_with, None
            raise error
        if self.fail_on is not None and html_to_plain_text(part).startswith(self.fail_on):
            self.fail_on = None
            raise ChannelError("sendMessage", 502, "Bad Gateway")
        self.sent.append((chat_id, part, thread_id))
        if buttons:
            self.keyboards[len(self.sent)] = tuple(buttons)
        return len(self.sent)

    def remove_buttons(self, chat_id: int, message_id: int) -> bool:
        self.buttons_removed.append((chat_id, message_id))
        return self.keyboards.pop(message_id, None) is not None

    def edit_text(self, chat_id: int, message_id: int, text: str) -> bool:
        self.edits.append((chat_id, message_id, text))
        self.keyboards.pop(message_id, None)
        return True

    def send_web_app(self, chat_id: int, text: str, label: str, url: str) -> int:
        (part,) = self.message_parts(text)
        number = self.send_part(chat_id, part)
        self.web_apps[number] = (label, url)
        return number

    def send_file(self, chat_id: int, file: OutgoingFile, *, thread_id: int | None = None) -> int:
        if self.fail_with is not None:
            error, self.fail_with = self.fail_with, None
            raise error
        self.files_sent.append((chat_id, file, thread_id))
        return len(self.sent) + len(self.files_sent)

    def send_text(self, chat_id: int, text: str, *, thread_id: int | None = None) -> list[int]:
        parts = self.message_parts(text)
        return [self.send_part(chat_id, part, thread_id=thread_id) for part in parts]

    @contextmanager
    def typing(self, chat_id: int, *, thread_id: int | None = None) -> Iterator[None]:
        self.typing_in.append(chat_id)
        yield

    def draft_parts(self, text: str) -> list[str]:
        return render_messages(text) if text.strip() else []

    def send_draft(
        self, chat_id: int, draft_id: int, part: str, *, thread_id: int | None = None
    ) -> None:
        if self.fail_drafts_with is not None:
            raise self.fail_drafts_with
        self.drafts.append((chat_id, draft_id, part))

    def get_me(self) -> BotUser:
        return self.me

    def get_file(self, file_id: str) -> tuple[str, int | None]:
        if file_id not in self.files:
            raise ChannelError("getFile", 400, "Bad Request: invalid file_id", kind="refused")
        return file_id, len(self.files[file_id])

    def download(self, file_path: str, max_bytes: int) -> bytes:
        return self.files[file_path][:max_bytes]

    @property
    def texts(self) -> list[str]:
        return [html_to_plain_text(text) for _, text, _ in self.sent]


@dataclass(frozen=True)
class BotUser:
    id: int
    username: str | None


class RecordingMetrics:
    """The MetricsPort, recording (name, value, unit) and (name, dimension, key, value)."""

    def __init__(self) -> None:
        self.added: list[tuple[str, float, str]] = []
        self.added_by: list[tuple[str, str, str, float]] = []

    def add(self, name: str, value: float, unit: str = "Count") -> None:
        self.added.append((name, value, unit))

    def add_by(self, name: str, dimension: str, key: str, value: float) -> None:
        self.added_by.append((name, dimension, key, value))

    def named(self, name: str) -> list[float]:
        return [value for added, value, _ in self.added if added == name]

    def total(self, name: str) -> float:
        return sum(self.named(name))


OVERALL = 0  # MemoryUsageStore's key for all chats together


class MemoryUsageStore:
    """A UsageStore in a dict: (chat, period) -> Tally, days and months those of `timezone`
    (TIMEZONE, as DynamoUsageStore's). Its `updates` are writes a MemorySessionStore applies
    with the turn it saves."""

    def __init__(self, *, timezone: str = "UTC") -> None:
        self.tallies: dict[tuple[int, str], Tally] = {}
        self.notices: dict[tuple[int, str], str] = {}  # (chat, key) -> the turn that told it
        self.zone = ZoneInfo(timezone)

    def _periods(self, at: datetime) -> tuple[str, str, str]:
        local = at.astimezone(self.zone)
        return f"day#{local:%Y-%m-%d}", f"month#{local:%Y-%m}", "total"

    def updates(
        self,
        chat_id: int,
        tally: Tally,
        at: datetime,
        *,
        overall: bool = False,
        by_model: ByModel | None = None,
    ) -> list[StoredWrite]:
        return [{"apply": lambda: self.add(chat_id, tally, at, overall=overall, by_model=by_model)}]

    def add(
        self,
        chat_id: int,
        tally: Tally,
        at: datetime,
        *,
        overall: bool = False,
        by_model: ByModel | None = None,
    ) -> None:
        for chat in (chat_id, OVERALL) if overall else (chat_id,):
            for period in self._periods(at):
                self.tallies[(chat, period)] = self.tallies.get((chat, period), Tally()) + tally
        month = self._periods(at)[1][len("month#") :]
        for model, used in (by_model or {}).items():
            key = (chat_id, f"{MODEL_PREFIX}{month}#{model[:MODEL_NAME_MAX]}")
            self.tallies[key] = self.tallies.get(key, Tally()) + used

    def overall_summary(self, at: datetime) -> UsageSummary:
        return self.summary(OVERALL, at)

    def models(self, chat_id: int, at: datetime) -> dict[str, Tally]:
        prefix = f"{MODEL_PREFIX}{self._periods(at)[1][len('month#') :]}#"
        return {
            period[len(prefix) :]: tally
            for (chat, period), tally in self.tallies.items()
            if chat == chat_id and period.startswith(prefix)
        }

    def first_notice(self, chat_id: int, key: str, turn_id: str, at: datetime) -> bool:
        told_by = self.notices.setdefault((chat_id, key), turn_id)
        return told_by == turn_id

    def summary(self, chat_id: int, at: datetime) -> UsageSummary:
        day, month, total = self._periods(at)
        return UsageSummary(
            chat_id,
            day[4:],
            month[6:],
            today=self.tallies.get((chat_id, day), Tally()),
            this_month=self.tallies.get((chat_id, month), Tally()),
            total=self.tallies.get((chat_id, total), Tally()),
        )

    def periods(self, chat_id: int | None) -> dict[str, Tally]:
        owner = OVERALL if chat_id is None else chat_id
        return {period: tally for (chat, period), tally in self.tallies.items() if chat == owner}

    def chats(self) -> list[int]:
        return sorted({chat for chat, _ in self.tallies if chat != OVERALL})


class MemoryQueue:
    """The TurnQueue, recording (job, group, dedup_id); `fail` makes enqueue raise."""

    def __init__(self, fail: bool = False) -> None:
        self.sent: list[tuple[AnyJob, str, str]] = []
        self.fail = fail

    def enqueue(self, job: AnyJob, group: str, dedup_id: str) -> str:
        if self.fail:
            raise StorageError("SqsTurnQueue.enqueue: unreachable")
        self.sent.append((job, group, dedup_id))
        return f"message-{len(self.sent)}"

    @property
    def jobs(self) -> list[AnyJob]:
        return [job for job, _, _ in self.sent]


class MemoryStopFlags:
    """StopFlags in a dict: session key -> time requested (ms); `fail` makes request raise."""

    def __init__(self, fail: bool = False) -> None:
        self.flags: dict[str, int] = {}
        self.requested: list[str] = []
        self.fail = fail

    def request(self, session_key: str, at_ms: int | None = None) -> None:
        if self.fail:
            raise StorageError("DynamoStopFlags.request: unreachable")
        self.requested.append(session_key)
        self.flags[session_key] = at_ms or 0

    def requested_since(self, session_key: str, since_ms: int) -> bool:
        return session_key in self.flags and self.flags[session_key] >= since_ms

    def clear(self, session_key: str) -> bool:
        return self.flags.pop(session_key, None) is not None


def wall_clock_ms() -> int:
    return int(time.time() * 1000)


class MemoryAlbumBook:
    """AlbumBook in a dict; `now_ms` is the clock parts are recorded by (the wall clock, as
    DynamoAlbumBook's), `fail` makes add_part raise (the webhook records on a best-effort
    basis)."""

    def __init__(self, now_ms: Callable[[], int] = wall_clock_ms, fail: bool = False) -> None:
        self.albums: dict[str, AlbumRecord] = {}
        self.now_ms = now_ms
        self.fail = fail
        self.claims: list[tuple[str, int, frozenset[int]]] = []

    def add_part(self, key: str, update_id: int, update: Any) -> None:
        if self.fail:
            raise StorageError("DynamoAlbumBook.add_part: unreachable")
        old = self.albums.get(key) or AlbumRecord(parts={}, last_part_ms=0)
        parts = {**old.parts, update_id: copy.deepcopy(dict(update))}
        self.albums[key] = replace(old, parts=parts, last_part_ms=self.now_ms())

    def get(self, key: str) -> AlbumRecord | None:
        return self.albums.get(key)

    def claim(self, key: str, lead: int, parts: frozenset[int]) -> AlbumRecord:
        self.claims.append((key, lead, parts))
        old = self.albums.get(key) or AlbumRecord(parts={}, last_part_ms=0)
        if old.lead is None or old.lead == lead:
            self.albums[key] = replace(old, lead=lead, claimed=parts)
        return self.albums[key]


class MemoryHookStore:
    """HookStore and HookInbox in dicts; `fail` makes every call raise (DynamoDB unreachable)."""

    def __init__(self) -> None:
        self.stored: dict[str, Hook] = {}
        self.slots: dict[tuple[str, str], int] = {}
        self.remembered: dict[tuple[str, str], datetime] = {}
        self.delivered: dict[str, list[Delivery]] = {}  # newest first
        self.fail = False

    def _check(self) -> None:
        if self.fail:
            raise StorageError("DynamoHookStore: unreachable")

    def hook(self, name: str) -> Hook | None:
        self._check()
        return self.stored.get(name)

    def hooks(self) -> list[Hook]:
        self._check()
        return sorted(self.stored.values(), key=lambda hook: hook.name)

    def add(self, hook: Hook) -> bool:
        self._check()
        if hook.name in self.stored:
            return False
        self.stored[hook.name] = hook
        return True

    def remove(self, name: str) -> bool:
        self._check()
        return self.stored.pop(name, None) is not None

    def take_slot(self, name: str, minute: str, limit: int) -> bool:
        self._check()
        count = self.slots.get((name, minute), 0)
        if count >= limit:
            return False
        self.slots[(name, minute)] = count + 1
        return True

    def seen(self, name: str, keys: Sequence[str]) -> bool:
        self._check()
        return any((name, key) in self.remembered for key in keys)

    def remember(self, name: str, keys: Sequence[str], until: datetime) -> None:
        self._check()
        for key in keys:
            self.remembered[(name, key)] = until

    def record(self, name: str, delivery: Delivery) -> None:
        self._check()
        kept = self.delivered.setdefault(name, [])
        kept.insert(0, delivery)
        del kept[DELIVERIES_KEPT:]

    def deliveries(self, name: str) -> list[Delivery]:
        self._check()
        return list(self.delivered.get(name, []))


class MemoryFeedbackBook:
    """FeedbackBook in dicts (the newest reaction per message and person, the newest edit per
    message); `fail` makes every call raise."""

    def __init__(self) -> None:
        self.reacted: dict[tuple[int, int, int], Reaction] = {}
        self.answers: set[tuple[int, int]] = set()  # (chat, message) the bot sent
        self.edits: dict[tuple[str, int], Edit] = {}
        self.fail = False

    def record_reaction(self, reaction: Reaction) -> None:
        if self.fail:
            raise StorageError("DynamoFeedbackBook.record_reaction: unreachable")
        key = (reaction.chat_id, reaction.message_id, reaction.person_id)
        old = self.reacted.get(key)
        if old is None or old.date <= reaction.date:
            self.reacted[key] = reaction

    def reactions(self, chat_id: int) -> list[Reaction]:
        return [self.reacted[key] for key in sorted(self.reacted) if key[0] == chat_id]

    def record_answers(self, chat_id: int, message_ids: Sequence[int]) -> None:
        if self.fail:
            raise StorageError("DynamoFeedbackBook.record_answers: unreachable")
        self.answers.update((chat_id, message_id) for message_id in message_ids)

    def answer_writes(self, chat_id: int, message_ids: Sequence[int]) -> list[StoredWrite]:
        return [{"apply": lambda: self.record_answers(chat_id, message_ids)}]

    def answers_among(self, chat_id: int, message_ids: Collection[int]) -> set[int]:
        return {message_id for message_id in message_ids if (chat_id, message_id) in self.answers}

    def record_edit(self, edit: Edit) -> None:
        if self.fail:
            raise StorageError("DynamoFeedbackBook.record_edit: unreachable")
        old = self.edits.get((edit.session_key, edit.message_id))
        if old is None or old.edit_date <= edit.edit_date:
            self.edits[(edit.session_key, edit.message_id)] = edit

    def latest_edit(self, session_key: str, message_id: int) -> Edit | None:
        return self.edits.get((session_key, message_id))


def _whole_seconds(at: datetime) -> datetime:
    """A time as DynamoDB keeps it (epoch seconds) and reads it back: in UTC, to the second."""
    return datetime.fromtimestamp(int(at.timestamp()), UTC)


EPOCH = datetime.fromtimestamp(0, UTC)


class MemoryPairingStore:
    """PairingStore in dicts, keeping times and listing order as DynamoPairingStore does;
    `fail` makes every call raise (DynamoDB unreachable)."""

    def __init__(self) -> None:
        self.persons: dict[int, Person] = {}
        self.codes: dict[str, PairingCode] = {}
        self.asks: dict[int, AskRecord] = {}
        self.hours: dict[str, int] = {}
        self.fail = False

    def _check(self) -> None:
        if self.fail:
            raise StorageError("DynamoPairingStore: unreachable")

    def person(self, user_id: int) -> Person | None:
        self._check()
        return self.persons.get(user_id)

    def people(self) -> list[Person]:
        # By sort key, as the partition's Query returns them: `person#<user id>`, as text.
        return [self.persons[user_id] for user_id in sorted(self.persons, key=str)]

    def ask_record(self, user_id: int) -> AskRecord | None:
        self._check()
        return self.asks.get(user_id)

    def take_hour_slot(self, hour: str, limit: int) -> bool:
        if self.hours.get(hour, 0) >= limit:
            return False
        self.hours[hour] = self.hours.get(hour, 0) + 1
        return True

    def open_code(self, pairing: PairingCode, day: str, count: int) -> bool:
        if pairing.code in self.codes:
            return False
        stored = replace(pairing, expires=_whole_seconds(pairing.expires))
        self.codes[pairing.code] = stored
        self.asks[pairing.asker.user_id] = AskRecord(stored.code, stored.expires, day, count)
        return True

    def code(self, code: str) -> PairingCode | None:
        return self.codes.get(code)

    def open_codes(self) -> list[PairingCode]:
        return [self.codes[code] for code in sorted(self.codes)]

    def approve(self, pairing: PairingCode, at: datetime) -> bool:
        if self.codes.pop(pairing.code, None) is None:
            return False
        self.asks.pop(pairing.asker.user_id, None)
        self.persons[pairing.asker.user_id] = Person(pairing.asker, _whole_seconds(at))
        return True

    def deny(self, pairing: PairingCode, until: datetime) -> bool:
        if self.codes.pop(pairing.code, None) is None:
            return False
        # The refusal replaces the ask: no code, no count, only how long it holds.
        refused = AskRecord(None, EPOCH, "", 0, denied_until=_whole_seconds(until))
        self.asks[pairing.asker.user_id] = refused
        return True

    def remove(self, user_id: int) -> bool:
        return self.persons.pop(user_id, None) is not None


class MemoryInviteStore:
    """InviteStore in a dict, admitting into a MemoryPairingStore's people as DynamoInviteStore
    admits into the pairing partition: a use is counted only with its person, atomically."""

    def __init__(self, people: MemoryPairingStore) -> None:
        self.people = people
        self.stored: dict[str, Invite] = {}

    def make_invite(self, invite: Invite) -> None:
        self.stored[invite.digest] = replace(
            invite,
            expires=_whole_seconds(invite.expires),
            made_at=_whole_seconds(invite.made_at),
        )

    def invites(self) -> list[Invite]:
        return [self.stored[digest] for digest in sorted(self.stored)]

    def revoke_invite(self, invite_id: str) -> bool:
        found = [digest for digest in self.stored if digest.startswith(invite_id)]
        for digest in found:
            del self.stored[digest]
        return bool(found)

    def use_invite(self, digest: str, admitted: Asker, at: datetime) -> bool:
        self.people._check()
        invite = self.stored.get(digest)
        if invite is None or not invite.open(at) or admitted.user_id in self.people.persons:
            return False
        self.stored[digest] = replace(invite, uses=invite.uses + 1)
        self.people.persons[admitted.user_id] = Person(admitted, _whole_seconds(at))
        return True


class MemoryLedger:
    """The UpdateLedger in memory: the first delivery of each update id runs."""

    def __init__(self) -> None:
        self.seen: set[int] = set()

    def once(self, update: dict[str, Any], enqueue: Callable[[], str]) -> bool:
        if update["update_id"] in self.seen:
            return False
        enqueue()
        self.seen.add(update["update_id"])
        return True


class MemoryTurnJournal:
    """A TurnJournal in a dict. Records are copied in and out, as a store would: a new run of a
    turn sees what earlier runs recorded, never their objects. A MemorySessionStore given this
    journal returns a session's records with the session, as the DynamoDB Query does."""

    def __init__(self) -> None:
        self.records: dict[tuple[str, str], TurnProgress] = {}

    def _stored(self, session_key: str, progress: TurnProgress) -> TurnProgress:
        key = (session_key, progress.turn_id)
        if key not in self.records:
            self.records[key] = TurnProgress(progress.turn_id, recorded=True)
        if progress.context is not None:
            self.records[key].context = progress.context
        return self.records[key]

    def get(self, session_key: str, turn_id: str) -> TurnProgress:
        stored = self.records.get((session_key, turn_id))
        return copy.deepcopy(stored) if stored is not None else TurnProgress(turn_id)

    def checkpoint(self, session_key: str, progress: TurnProgress) -> None:
        progress.recorded = True
        self.records[(session_key, progress.turn_id)] = copy.deepcopy(progress)

    def record_send(
        self, session_key: str, progress: TurnProgress, number: int, shown: Shown
    ) -> None:
        self._stored(session_key, progress).sent.setdefault(number, shown)
        progress.sent[number] = shown
        progress.recorded = True

    def record_part(
        self, session_key: str, progress: TurnProgress, number: int, part: int, text: str
    ) -> None:
        stored = self._stored(session_key, progress)
        stored.parts.add((number, part))
        progress.parts.add((number, part))
        if part == 1:
            stored.partial = progress.partial = (number, text)
        progress.recorded = True

    def set_aside(
        self, session_key: str, progress: TurnProgress, numbers: list[int], at: int
    ) -> None:
        stored = self._stored(session_key, progress)
        aside = [
            Aside(at, progress.sent[number].text)
            for number in sorted(numbers)
            if number in progress.sent and progress.sent[number].identity is not None
        ]
        for record in (stored, progress):
            for number in numbers:
                record.sent.pop(number, None)
            record.parts = {part for part in record.parts if part[0] not in numbers}
            if record.partial is not None and record.partial[0] in numbers:
                record.partial = None
            record.aside.extend(aside)
        progress.recorded = True

    def end(self, session_key: str, progress: TurnProgress, text: str, number: int) -> None:
        stored = self._stored(session_key, progress)
        stored.ended = progress.ended = text
        stored.ended_at = progress.ended_at = number
        progress.recorded = True

    def finish(self, session_key: str, progress: TurnProgress) -> list[StoredWrite]:
        if not progress.recorded:
            return []
        return [{"apply": lambda: self.records.pop((session_key, progress.turn_id), None)}]

    def discard(self, session_key: str, progress: TurnProgress) -> None:
        self.records.pop((session_key, progress.turn_id), None)
        progress.recorded = False

    def mark_done(self, session_key: str, progress: TurnProgress) -> None:
        self.records[(session_key, progress.turn_id)] = TurnProgress(
            progress.turn_id, done=True, recorded=True
        )
        progress.done = True

    def open_turns(self, session_key: str) -> dict[str, TurnProgress]:
        return {
            turn_id: copy.deepcopy(progress)
            for (key, turn_id), progress in self.records.items()
            if key == session_key
        }


class MemorySessionStore:
    """A SessionStore in a dict, with the semantics of adapters/aws/sessions.py: a conditional
    append that also makes the writes other stores folded into it (`also`), and refuses a
    message over DynamoDB's item limit (a StorageError, not a conflict). `append_failures`
    stands in for the other ways an append fails (a folded write refused, DynamoDB busy)."""

    def __init__(self, journal: MemoryTurnJournal | None = None) -> None:
        self.messages: dict[str, list[Message]] = {}
        self.cursors: dict[str, int] = {}
        self.noticed: dict[str, int] = {}  # noticed_upto, where a session has one
        self.noticed_at: dict[str, datetime] = {}  # when the chat was last told (to the second)
        self.recent: dict[str, tuple[str, ...]] = {}
        self.turn_logs: dict[str, tuple[TurnRecord, ...]] = {}
        self.preferences: dict[str, ChatPreferences] = {}
        self.journal = journal
        self.advance_failures = 0  # advance_cursor dies this many times (a crash, mid-way)
        self.append_failures: list[BaseException] = []  # the next appends raise these, in turn
        self.advances: list[tuple[str, int, int]] = []

    def load(self, key: str, limit: int) -> SessionHistory:
        messages = self.messages.get(key, [])
        cursor = self.cursors.get(key, 0)
        window = messages[cursor:][-limit:] if limit > 0 else []
        return SessionHistory(
            key,
            align_to_user_turn(copy.deepcopy(window)),  # a store returns copies, never its own
            next_seq=len(messages),
            consolidated_upto=cursor,
            recent_turns=self.recent.get(key, ()),
            turn_log=self.turn_logs.get(key, ()),
            open_turns=self.journal.open_turns(key) if self.journal is not None else {},
            preferences=self.preferences.get(key, ChatPreferences()),
            noticed_upto=self.noticed.get(key),
            noticed_at=self.noticed_at.get(key),
        )

    def append(
        self,
        history: SessionHistory,
        messages: list[Message],
        *,
        turn_id: str | None = None,
        also: Sequence[StoredWrite] = (),
        record: TurnRecord | None = None,
    ) -> None:
        if self.append_failures:
            raise self.append_failures.pop(0)
        for number, message in enumerate(messages, start=1):
            size = len(json.dumps(message, ensure_ascii=False).encode())
            if size > ITEM_LIMIT_BYTES:  # as DynamoDB refuses the item: nothing is kept
                raise StorageError(
                    f"MemorySessionStore.append: message {number} of {len(messages)} is {size} "
                    f"bytes, over DynamoDB's item limit of {ITEM_LIMIT_BYTES}; nothing was saved"
                )
        stored = self.messages.setdefault(history.key, [])
        if len(stored) != history.next_seq:
            raise SessionConflict(history.key)
        stored.extend(copy.deepcopy(messages))
        for write in also:
            write["apply"]()
        if turn_id is not None:
            history.recent_turns = (*history.recent_turns, turn_id)[-RECENT_TURNS:]
            self.recent[history.key] = history.recent_turns
        if record is not None:
            history.turn_log = (*history.turn_log, record)[-RECENT_TURNS:]
            self.turn_logs[history.key] = history.turn_log
        if history.noticed_upto is not None:
            self.noticed[history.key] = history.noticed_upto
        if history.noticed_at is not None:  # kept as DynamoDB keeps it: UTC, to the second
            told = history.noticed_at.astimezone(UTC).replace(microsecond=0)
            self.noticed_at[history.key] = told
        history.next_seq += len(messages)
        history.messages.extend(messages)

    def load_range(self, key: str, start: int, end: int) -> list[tuple[int, Message]]:
        messages = self.messages.get(key, [])
        return [
            (seq, copy.deepcopy(messages[seq]))
            for seq in range(max(0, start), min(end, len(messages)))
        ]

    def set_preferences(self, key: str, preferences: ChatPreferences) -> None:
        self.preferences[key] = preferences

    def advance_cursor(self, key: str, expected: int, new: int, *, noticed: bool = False) -> bool:
        self.advances.append((key, expected, new))
        if self.advance_failures:
            self.advance_failures -= 1
            raise RuntimeError("the process died")
        if self.cursors.get(key, 0) != expected:
            return False
        self.cursors[key] = new
        self.noticed[key] = new if noticed else self.noticed.get(key, expected)
        return True


if TYPE_CHECKING:  # Each fake is its port, with no cast: `make typecheck` checks this file.

    def _fakes_implement_the_ports() -> None:
        workspace: Workspace = MemoryWorkspace()
        versioned: VersionedFiles = MemoryWorkspace()
        journal = MemoryTurnJournal()
        turn_journal: TurnJournal = journal
        sessions: SessionStore = MemorySessionStore(journal)
        jobs: JobStore = MemoryJobStore()
        schedules: Schedules = MemorySchedules()
        usage: UsageStore = MemoryUsageStore()
        stop_flags: StopFlags = MemoryStopFlags()
        queue: TurnQueue = MemoryQueue()
        ledger: UpdateLedger = MemoryLedger()
        channel: Channel = RecordingChannel()
        media: MediaSource = RecordingChannel()
        model: ChatModel = ScriptedModel()
        metrics: MetricsPort = RecordingMetrics()
        recall_indexes: RecallIndexObjects = MemoryRecallIndexObjects()
        embedder: Embedder = StandInEmbedder()
        approvals: ApprovalBook = MemoryApprovalBook()
        deadlines: ApprovalDeadlines = MemoryApprovalDeadlines()
        del recall_indexes, embedder, approvals, deadlines
        del workspace, versioned, turn_journal, sessions, jobs, schedules, usage, stop_flags
        del queue, ledger
        del channel, media, model, metrics


@dataclass(frozen=True)
class HeldLetter:
    """A dead letter as adapters/aws/dead_letters.py's DeadLetter shows it."""

    message_id: str
    group: str
    body: str
    sent_at: datetime | None = None
    receive_count: int = 3

    @property
    def size(self) -> int:
        return len(self.body.encode("utf-8"))

    def describe_job(self) -> str:
        return f"job in {self.group}"


class MemoryDeadLetters:
    """The console's DeadLetters port: letters held until replayed onto `replayed`."""

    def __init__(self, letters: Sequence[HeldLetter] = ()) -> None:
        self.letters = list(letters)
        self.replayed: list[tuple[str, HeldLetter]] = []  # (turn queue, letter)

    def peek(self) -> list[Any]:
        return list(self.letters)

    def replay(
        self, turn_queue_url: str, message_ids: set[str] | None
    ) -> tuple[list[Any], set[str]]:
        chosen = [
            letter
            for letter in self.letters
            if message_ids is None or letter.message_id in message_ids
        ]
        for letter in chosen:
            self.letters.remove(letter)
            self.replayed.append((turn_queue_url, letter))
        missing = (message_ids or set()) - {letter.message_id for letter in chosen}
        return chosen, missing
