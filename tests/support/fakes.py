"""In-memory implementations of the ports, for fast unit tests (no network)."""

from __future__ import annotations

import hashlib
from collections import deque
from dataclasses import replace
from typing import Any

from nanobot_lambda.cronjobs import CronJob
from nanobot_lambda.model import ModelError, ModelReply, ToolCall
from nanobot_lambda.workspace import Entry, WorkspaceFile, WriteConflict


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
            if current is None or self._etag(current) != if_match:
                raise WriteConflict(path)
        self.writes += 1
        self.files[path] = data
        return self._etag(data)

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


class ScriptedModel:
    """A ChatModel that replays replies and records every request (fails on an extra call)."""

    def __init__(self, *replies: ModelReply | Exception) -> None:
        self.replies: deque[ModelReply | Exception] = deque(replies)
        self.requests: list[tuple[list[dict[str, Any]], list[dict[str, Any]]]] = []
        self.tool_choices: list[Any] = []
        self.timeouts: list[float | None] = []

    def complete(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        *,
        tool_choice: Any = None,
        timeout: float | None = None,
    ) -> ModelReply:
        self.requests.append(([dict(message) for message in messages], tools))
        self.tool_choices.append(tool_choice)
        self.timeouts.append(timeout)
        if not self.replies:
            raise AssertionError("the model was called more often than scripted")
        reply = self.replies.popleft()
        if isinstance(reply, Exception):
            raise reply
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

    def put(self, job: CronJob) -> None:
        assert (job.chat_id, job.job_id) not in self.jobs
        self.jobs[(job.chat_id, job.job_id)] = job

    def get(self, chat_id: int, job_id: str) -> CronJob | None:
        return self.jobs.get((chat_id, job_id))

    def for_chat(self, chat_id: int) -> list[CronJob]:
        return sorted(
            (job for (chat, _), job in self.jobs.items() if chat == chat_id),
            key=lambda job: job.created_at,
        )

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
        assert self.fired.get((chat_id, job_id)) == scheduled_time
        self.firing_parts[(chat_id, job_id, scheduled_time)] = part

    def release_firing(self, chat_id: int, job_id: str, scheduled_time: str) -> None:
        if self.fired.get((chat_id, job_id)) == scheduled_time:
            del self.fired[(chat_id, job_id)]

    def record_run(self, job: CronJob, *, at: str, status: str) -> None:
        if (job.chat_id, job.job_id) in self.jobs:
            self.jobs[(job.chat_id, job.job_id)] = replace(job, last_run=at, last_status=status)

    def start_subagent(self, chat_id: int, subagent_id: str, *, now: int) -> None:
        self.subagents[(chat_id, subagent_id)] = now

    def finish_subagent(self, chat_id: int, subagent_id: str) -> None:
        self.subagents.pop((chat_id, subagent_id), None)

    def running_subagents(self, chat_id: int, *, now: int) -> int:
        return sum(1 for chat, _ in self.subagents if chat == chat_id)

    def remember_private_chat(self, chat_id: int) -> None:
        self.private_chat = chat_id

    def latest_private_chat(self) -> int | None:
        return self.private_chat


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


class RecordingBot:
    """The parts of TelegramBot the scheduler and tools use, recording what was sent."""

    def __init__(self) -> None:
        self.sent: list[tuple[int, str, int | None]] = []

    def send_text(self, chat_id: int, markdown: str, *, thread_id: int | None = None) -> list[int]:
        self.sent.append((chat_id, markdown, thread_id))
        return [len(self.sent)]

    def send_html(self, chat_id: int, html: str, *, thread_id: int | None = None) -> int:
        self.sent.append((chat_id, html, thread_id))
        return len(self.sent)
