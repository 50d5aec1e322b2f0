"""Everything the core touches, as Protocols: the ports, in one place to look them up.

A port lives next to the values it speaks in (`Workspace` in core/workspace.py, `SessionStore`
in core/sessions.py, `TurnJournal` in core/journal.py, `UsageStore` in core/usage_counts.py,
`AlbumBook` in core/albums.py, `PairingStore` in core/pairing.py, `JobStore` and `Schedules` in
core/cron.py, `TurnQueue` in core/jobs.py, the models' ports in core/model.py, `MetricsPort` in
core/telemetry.py), so that none of those modules imports this one and no import goes round in
a circle (an import-linter contract checks it). This module re-exports them (`HOMES`, loaded
on first use) and holds the ports that have no value types of their own (the channel's, /stop
flags, the retry delay, the webhook's update ledger). Importers may take a port from here or
from its module.

The adapters implement them (S3, DynamoDB, SQS and EventBridge Scheduler under `adapters/aws`,
litellm under `adapters/llm`, the Bot API under `adapters/telegram`); the test fakes in
`tests/support/fakes.py` implement them in memory, and tests/contract/ runs one suite of
expectations per storage port against both. The core imports nothing else of the outside
world, and every failure an adapter cannot handle itself reaches the core as one of the errors
in `core/errors.py`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from nanobot_lambda.core.albums import AlbumBook as AlbumBook
    from nanobot_lambda.core.cron import JobStore as JobStore
    from nanobot_lambda.core.cron import Schedules as Schedules
    from nanobot_lambda.core.inbound_events import HookInbox as HookInbox
    from nanobot_lambda.core.inbound_events import HookStore as HookStore
    from nanobot_lambda.core.jobs import TurnQueue as TurnQueue
    from nanobot_lambda.core.journal import TurnJournal as TurnJournal
    from nanobot_lambda.core.model import ChatModel as ChatModel
    from nanobot_lambda.core.model import Embedder as Embedder
    from nanobot_lambda.core.model import Speaker as Speaker
    from nanobot_lambda.core.model import TokenCounter as TokenCounter
    from nanobot_lambda.core.model import Transcriber as Transcriber
    from nanobot_lambda.core.outgoing import Button, OutgoingFile
    from nanobot_lambda.core.pairing import PairingStore as PairingStore
    from nanobot_lambda.core.reactions_and_edits import FeedbackBook as FeedbackBook
    from nanobot_lambda.core.recall_index import RecallIndexObjects as RecallIndexObjects
    from nanobot_lambda.core.sessions import SessionStore as SessionStore
    from nanobot_lambda.core.stored_writes import StoredWrite as StoredWrite
    from nanobot_lambda.core.telemetry import MetricsPort as MetricsPort
    from nanobot_lambda.core.usage_counts import UsageStore as UsageStore
    from nanobot_lambda.core.workspace import Workspace as Workspace

# Where each re-exported port lives. They are imported when first asked for, not with this
# module: the webhook (a latency-critical cold start) then loads only the modules of the ports
# it uses, as before they moved.
HOMES = {
    "AlbumBook": "albums",
    "ChatModel": "model",
    "Embedder": "model",
    "FeedbackBook": "reactions_and_edits",
    "HookInbox": "inbound_events",
    "HookStore": "inbound_events",
    "JobStore": "cron",
    "MetricsPort": "telemetry",
    "PairingStore": "pairing",
    "RecallIndexObjects": "recall_index",
    "Schedules": "cron",
    "SessionStore": "sessions",
    "Speaker": "model",
    "StoredWrite": "stored_writes",
    "TokenCounter": "model",
    "Transcriber": "model",
    "TurnJournal": "journal",
    "TurnQueue": "jobs",
    "UsageStore": "usage_counts",
    "Workspace": "workspace",
}

if not TYPE_CHECKING:  # mypy reads the imports above, so a misspelt name stays an error

    def __getattr__(name: str) -> Any:
        home = HOMES.get(name)
        if home is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        return getattr(importlib.import_module(f"nanobot_lambda.core.{home}"), name)


__all__ = [
    "AlbumBook",
    "BotIdentity",
    "Channel",
    "ChatModel",
    "Embedder",
    "FeedbackBook",
    "HookInbox",
    "HookStore",
    "JobStore",
    "MediaSource",
    "MetricsPort",
    "Outbox",
    "PairingStore",
    "RecallIndexObjects",
    "RetryDelay",
    "Schedules",
    "SessionStore",
    "Speaker",
    "StopFlags",
    "StoredWrite",
    "TokenCounter",
    "Transcriber",
    "TurnJournal",
    "TurnQueue",
    "UpdateLedger",
    "UsageStore",
    "Workspace",
]


# -- ports with no value types of their own ------------------------------------------------


class StopFlags(Protocol):
    """/stop requests, raised by the webhook the moment /stop arrives."""

    def request(self, session_key: str, at_ms: int | None = None) -> None: ...

    def requested_since(self, session_key: str, since_ms: int) -> bool: ...

    def clear(self, session_key: str) -> bool:
        """Remove the flag; True if there was one."""
        ...


class RetryDelay(Protocol):
    """How soon the queue offers a failed job again (instead of its visibility timeout)."""

    def retry_after(self, receipt_handle: str, seconds: int) -> None: ...


class UpdateLedger(Protocol):
    """The webhook's record of the updates it queued (Telegram re-sends for about a day)."""

    def once(self, update: dict[str, Any], enqueue: Callable[[], str]) -> bool:
        """Run `enqueue` unless this update was queued before; True when it ran now. Raises
        what `enqueue` raises (a retry then runs it), and UpdateInProgress when another
        delivery is queueing the same update."""
        ...


# -- the chat channel ----------------------------------------------------------------------


class BotIdentity(Protocol):
    @property
    def id(self) -> int: ...

    @property
    def username(self) -> str | None: ...


class Channel(Protocol):
    """Where the assistant talks: Telegram's Bot API."""

    def message_parts(self, text: str) -> list[str]:
        """The messages the Markdown `text` goes out as, within the channel's length limit."""
        ...

    def send_part(
        self,
        chat_id: int,
        part: str,
        *,
        thread_id: int | None = None,
        buttons: Sequence[Button] = (),
    ) -> int:
        """Send one of `message_parts`, with inline `buttons` under it (a label's press comes
        back as the user's choice); returns its message id."""
        ...

    def remove_buttons(self, chat_id: int, message_id: int) -> bool:
        """Take the buttons off a message; False when it has none any more (a button of it was
        pressed before) or is gone."""
        ...

    def edit_text(self, chat_id: int, message_id: int, text: str) -> bool:
        """Replace a message's text with Markdown `text` (within one message), its buttons
        taken off; False when it is gone or reads so already."""
        ...

    def send_text(self, chat_id: int, text: str, *, thread_id: int | None = None) -> list[int]:
        """Send Markdown `text` in as many messages as it takes (not journaled)."""
        ...

    def send_web_app(self, chat_id: int, text: str, label: str, url: str) -> int:
        """Send Markdown `text` (one message) with one button that opens the Mini App at `url`
        (Telegram: an https URL, in a private chat); returns its message id."""
        ...

    def send_file(self, chat_id: int, file: OutgoingFile, *, thread_id: int | None = None) -> int:
        """Upload `file` as its kind (photo, document, audio, voice); returns its message id."""
        ...

    def typing(self, chat_id: int, *, thread_id: int | None = None) -> AbstractContextManager[None]:
        """Show "typing…" in the chat while the context is open."""
        ...

    def draft_parts(self, text: str) -> list[str]:
        """The drafts Markdown `text` that is still being written shows as: like
        `message_parts`, with nothing shown of markup not yet closed; [] when nothing is
        visible yet."""
        ...

    def send_draft(
        self, chat_id: int, draft_id: int, part: str, *, thread_id: int | None = None
    ) -> None:
        """Show `part` (one of `draft_parts`) as an ephemeral draft in a private chat; drafts
        with the same non-zero `draft_id` replace each other. One attempt: raises
        ChannelError (with `retry_after` when rate-limited); a chat where drafts are not
        available answers with a 4xx status."""
        ...

    def get_me(self) -> BotIdentity: ...


class Outbox(Protocol):
    """A turn's messages to the chat, each sent at most once however often the turn runs."""

    def send(
        self,
        chat_id: int,
        text: str,
        thread_id: int | None = None,
        *,
        record: bool = True,
        buttons: Sequence[Button] = (),
    ) -> bool:
        """Send `text` (or what an earlier run of the turn did not send of it), `buttons`
        under its last part; False when the chat blocked the bot."""
        ...

    def send_file(self, chat_id: int, file: OutgoingFile, thread_id: int | None = None) -> bool:
        """Send `file` unless an earlier run of the turn did; False when the chat blocked the
        bot."""
        ...


class MediaSource(Protocol):
    """Files users sent, fetched from the channel."""

    def get_me(self) -> BotIdentity: ...

    def get_file(self, file_id: str) -> tuple[str, int | None]:
        """(file path, size if known) for a file the bot received."""
        ...

    def download(self, file_path: str, max_bytes: int) -> bytes: ...
