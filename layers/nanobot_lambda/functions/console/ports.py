"""What the console's handler hands in (functions/console/app.py builds them; the tests give
fakes), and the one error every view raises for a request it cannot do."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

from nanobot_lambda.core.cron import JobStore, Schedules
from nanobot_lambda.core.errors import NanobotError
from nanobot_lambda.core.inbound_events import HookStore
from nanobot_lambda.core.memory_versions import VersionedFiles
from nanobot_lambda.core.pairing import PairingStore
from nanobot_lambda.core.scopes import Scope
from nanobot_lambda.core.sessions import SessionStore
from nanobot_lambda.core.usage_counts import UsageStore
from nanobot_lambda.core.workspace import Entry, WorkspaceFile


class ScopeFiles(VersionedFiles, Protocol):
    """A scope's own workspace (the owner's: the workspace), with its files' versions."""

    def refresh(self) -> None: ...

    def write(
        self, path: str, data: bytes, *, if_match: str | None = None, if_none_match: bool = False
    ) -> str: ...

    def list_files(self, path: str) -> list[Entry]: ...

    def list_dir(self, path: str) -> list[Entry]: ...

    def read(self, path: str, *, fresh: bool = False) -> WorkspaceFile | None: ...


class DeadLetters(Protocol):
    """The turn queue's dead-letter queue (adapters/aws/dead_letters.py)."""

    def peek(self) -> list[Any]:
        """Its messages, nothing consumed (each with message_id, group, body, sent_at,
        receive_count, size, describe_job())."""
        ...

    def replay(
        self, turn_queue_url: str, message_ids: set[str] | None
    ) -> tuple[list[Any], set[str]]: ...


class Lazily:
    """A port made on its first use (its client's start is then paid by the first request that
    needs it, not by every cold start): the console rarely schedules or replays."""

    def __init__(self, make: Callable[[], Any]) -> None:
        self._make = make
        self._made: Any = None

    def __getattr__(self, name: str) -> Any:
        if self._made is None:
            self._made = self._make()
        return getattr(self._made, name)


class ConsoleError(NanobotError):
    """A request the console cannot do: its HTTP status and what to tell the page."""

    def __init__(self, status: int, message: str, **details: Any) -> None:
        super().__init__(message)
        self.status = status
        self.details = details


@dataclass
class ConsolePorts:
    workspace: Callable[[Scope], ScopeFiles]  # any scope's own workspace, the owner's included
    jobs: JobStore
    schedules: Schedules
    hooks: HookStore
    sessions: SessionStore
    usage: UsageStore
    pairing: PairingStore | None  # None: PAIRING=off
    welcome: Callable[[int], None]  # tells a person approved here that they may write now
    dead_letters: DeadLetters | None = None  # None: TURN_DLQ_URL unset
    clock: Callable[[], datetime] = field(default=lambda: datetime.now(UTC))
