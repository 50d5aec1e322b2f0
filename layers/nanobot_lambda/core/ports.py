"""Everything the core touches, as Protocols: the ports.

The adapters implement them (S3, DynamoDB, SQS and EventBridge Scheduler under `adapters/aws`,
litellm under `adapters/llm`, the Bot API under `adapters/telegram`); the test fakes in
`tests/support/fakes.py` implement them in memory. The core imports nothing else of the
outside world, and every failure an adapter cannot handle itself reaches the core as one of
the errors in `core/errors.py`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from nanobot_lambda.core.albums import AlbumRecord
    from nanobot_lambda.core.cron import CronJob
    from nanobot_lambda.core.jobs import AnyJob
    from nanobot_lambda.core.journal import Shown, TurnProgress
    from nanobot_lambda.core.model import (
        Embeddings,
        ModelReply,
        Speech,
        TextStream,
        ToolChoice,
        Transcript,
    )
    from nanobot_lambda.core.outgoing import OutgoingFile
    from nanobot_lambda.core.pairing import AskRecord, PairingCode, Person
    from nanobot_lambda.core.recall_index import StoredIndex
    from nanobot_lambda.core.scopes import Scope
    from nanobot_lambda.core.sessions import Message, SessionHistory
    from nanobot_lambda.core.usage import Tally, UsageSummary
    from nanobot_lambda.core.workspace import Entry, WorkspaceFile

StoredWrite = Mapping[str, Any]
"""A write one store prepared for another to make in the same transaction (a turn's journal
closing, its usage counts, saved with its messages). Opaque to the core: it only passes it on."""


# -- storage -------------------------------------------------------------------------------


class Workspace(Protocol):
    """The assistant's files, by workspace-relative, normalised path (see `core/paths.py`)."""

    def refresh(self) -> None:
        """Start of a turn: revalidate what the container has cached."""
        ...

    def read(self, path: str, *, fresh: bool = False) -> WorkspaceFile | None:
        """The file, or None. `fresh` bypasses any cache (used after a write conflict)."""
        ...

    def write(
        self, path: str, data: bytes, *, if_match: str | None = None, if_none_match: bool = False
    ) -> str:
        """Store `data`; returns the new ETag. Raises WriteConflict when a condition fails, and
        NotFound when `if_match` names a version of a file deleted since."""
        ...

    def list_dir(self, path: str) -> list[Entry]:
        """Immediate children of a folder ('' is the root), folders first."""
        ...

    def list_files(self, path: str) -> list[Entry]:
        """Every file under a folder ('' is the root), recursively, sorted by path."""
        ...


class RecallIndexObjects(Protocol):
    """Each scope's recall index as one stored object (core/recall_index.py), kept outside
    the workspace the model can list or write."""

    def get(self, scope: Scope, *, unless_etag: str | None = None) -> StoredIndex | None:
        """The stored object, or None when there is none. With `unless_etag`, a conditional
        read: when the object still has that ETag its bytes are not sent again
        (`StoredIndex.data` is None)."""
        ...

    def put(self, scope: Scope, data: bytes, *, if_match: str | None) -> str:
        """Store the object only if it still has the ETag `if_match` (None: only if there is
        none yet); returns the new ETag. Raises WriteConflict when the condition fails."""
        ...


class SessionStore(Protocol):
    """Conversations, one message at a time (see `core/sessions.py`)."""

    def load(self, key: str, limit: int) -> SessionHistory:
        """The header, the unconsolidated window (at most `limit` messages, starting at a user
        message) and the session's unfinished turns, in one read."""
        ...

    def append(
        self,
        history: SessionHistory,
        messages: list[Message],
        *,
        turn_id: str | None = None,
        also: Sequence[StoredWrite] = (),
    ) -> None:
        """Save `messages` after the history in one transaction (per 99 messages); `turn_id`
        joins `recent_turns` and the `also` writes are made with the last one. Raises
        SessionConflict when another writer changed the session since it was loaded."""
        ...

    def load_range(self, key: str, start: int, end: int) -> list[tuple[int, Message]]:
        """Messages with start <= seq < end, oldest first."""
        ...

    def advance_cursor(self, key: str, expected: int, new: int, *, noticed: bool = False) -> bool:
        """Move `consolidated_upto` from `expected` to `new`; False if it had moved already.
        `noticed`: the caller tells the chat itself (/compact, /new): `noticed_upto` moves too;
        otherwise it stays where it was (at `expected` if it had none), so a notice is due."""
        ...


class TurnJournal(Protocol):
    """Each unfinished turn's progress (see `core/journal.py`)."""

    def get(self, session_key: str, turn_id: str) -> TurnProgress:
        """The turn's record, for turns whose session load does not return it."""
        ...

    def checkpoint(self, session_key: str, progress: TurnProgress) -> None:
        """Record the turn's messages so far, with the sends recorded so far."""
        ...

    def record_send(
        self, session_key: str, progress: TurnProgress, number: int, shown: Shown
    ) -> None:
        """Record that message `number`, `shown`, was sent in full."""
        ...

    def record_part(
        self, session_key: str, progress: TurnProgress, number: int, part: int, text: str
    ) -> None:
        """Record that `part` of message `number` was sent (with the first, the text)."""
        ...

    def set_aside(
        self, session_key: str, progress: TurnProgress, numbers: list[int], at: int
    ) -> None:
        """Messages `numbers` an earlier run sent are not this run's: keep them aside, shown
        before message `at` of the turn's messages (core/journal.py)."""
        ...

    def end(self, session_key: str, progress: TurnProgress, text: str, number: int) -> None:
        """Record that the turn ends unanswered, with the text named `text` as message
        `number`."""
        ...

    def finish(self, session_key: str, progress: TurnProgress) -> list[StoredWrite]:
        """The writes that close the turn's record, made with the transaction saving it."""
        ...

    def discard(self, session_key: str, progress: TurnProgress) -> None:
        """Forget an unfinished turn's record (the user was told it failed)."""
        ...

    def mark_done(self, session_key: str, progress: TurnProgress) -> None:
        """A turn that saves no session: record that it is done, replacing its progress."""
        ...


class StopFlags(Protocol):
    """/stop requests, raised by the webhook the moment /stop arrives."""

    def request(self, session_key: str, at_ms: int | None = None) -> None: ...

    def requested_since(self, session_key: str, since_ms: int) -> bool: ...

    def clear(self, session_key: str) -> bool:
        """Remove the flag; True if there was one."""
        ...


class TurnQueue(Protocol):
    """The FIFO queue of jobs for agent_turn, ordered per group."""

    def enqueue(self, job: AnyJob, group: str, dedup_id: str) -> str:
        """Queue `job` in `group`; a second job with the same `dedup_id` (within five minutes)
        is dropped. Returns the message id."""
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


class AlbumBook(Protocol):
    """The parts of albums (media groups) as the webhook received them, and which turn
    claimed them (see `core/albums.py`). Keyed by `albums.album_key`."""

    def add_part(self, key: str, update_id: int, update: Mapping[str, Any]) -> None:
        """Record a part (again, for a re-sent update: harmless) and when it arrived."""
        ...

    def get(self, key: str) -> AlbumRecord | None:
        """The album's record, read consistently; None if no part was recorded."""
        ...

    def claim(self, key: str, lead: int, parts: frozenset[int]) -> AlbumRecord:
        """Make `lead`'s turn the one answering `parts`, unless another turn claimed the
        album first; returns the record as claimed (by whichever turn did)."""
        ...


class PairingStore(Protocol):
    """Who the owner approved, and the codes strangers were given (see `core/pairing.py`)."""

    def person(self, user_id: int) -> Person | None: ...

    def people(self) -> list[Person]: ...

    def ask_record(self, user_id: int) -> AskRecord | None: ...

    def take_hour_slot(self, hour: str, limit: int) -> bool:
        """Count one more code in `hour`; False (and nothing counted) past `limit`."""
        ...

    def open_code(self, pairing: PairingCode, day: str, count: int) -> bool:
        """Record a new code and the person's ask (`count` codes on `day`); False when the code
        is open for someone else already."""
        ...

    def code(self, code: str) -> PairingCode | None: ...

    def open_codes(self) -> list[PairingCode]: ...

    def approve(self, pairing: PairingCode, at: datetime) -> bool:
        """Approve the code's person and close the code, at once; False if it was closed."""
        ...

    def deny(self, pairing: PairingCode, until: datetime) -> bool:
        """Close the code and refuse its person until `until`; False if it was closed."""
        ...

    def remove(self, user_id: int) -> bool:
        """Take an approval back; False if there was none."""
        ...


class JobStore(Protocol):
    """Scheduled jobs, background-task records and the owner's latest private chat."""

    def put(self, job: CronJob) -> None: ...

    def get(self, chat_id: int, job_id: str) -> CronJob | None: ...

    def for_chat(self, chat_id: int) -> list[CronJob]: ...

    def all_jobs(self) -> list[CronJob]:
        """Every chat's jobs (for the operator; the bot itself only lists per chat)."""
        ...

    def delete(self, chat_id: int, job_id: str) -> bool: ...

    def claim_firing(self, chat_id: int, job_id: str, scheduled_time: str) -> int | None:
        """None if this firing was handled already or the job is gone; otherwise how many
        parts of its message an earlier, failed attempt of this firing delivered."""
        ...

    def record_firing_part(self, chat_id: int, job_id: str, scheduled_time: str, part: int) -> None:
        """Record that the channel accepted `part` of this firing's message."""
        ...

    def release_firing(self, chat_id: int, job_id: str, scheduled_time: str) -> None:
        """Undo a claim whose work failed, so that the retry of this firing runs it."""
        ...

    def record_run(self, job: CronJob, *, at: str, status: str) -> None: ...

    def start_subagent(self, chat_id: int, subagent_id: str, *, now: int) -> None: ...

    def finish_subagent(self, chat_id: int, subagent_id: str) -> None: ...

    def running_subagents(self, chat_id: int, *, now: int) -> int: ...

    def remember_private_chat(self, chat_id: int) -> None: ...

    def latest_private_chat(self) -> int | None: ...


class Schedules(Protocol):
    """The jobs' schedules (EventBridge Scheduler), which fire the scheduler function."""

    def create(self, job: CronJob) -> None:
        """Create the job's schedule; one that exists already (made for this job) is not an
        error."""
        ...

    def delete(self, job: CronJob) -> None:
        """Delete the job's schedule; one already gone is not an error."""
        ...


class UsageStore(Protocol):
    """Usage counts per chat: per day, per month and in total (see `core/usage.py`); with
    `overall`, also those of all chats together (kept only while a limit needs them, see
    `core/spend.py`)."""

    def updates(
        self, chat_id: int, tally: Tally, at: datetime, *, overall: bool = False
    ) -> list[StoredWrite]:
        """The writes that add `tally`, to be made with the transaction saving a turn."""
        ...

    def add(self, chat_id: int, tally: Tally, at: datetime, *, overall: bool = False) -> None: ...

    def summary(self, chat_id: int, at: datetime) -> UsageSummary: ...

    def overall_summary(self, at: datetime) -> UsageSummary:
        """All chats together (counted while `overall` was passed), as chat 0."""
        ...

    def first_notice(self, chat_id: int, key: str, turn_id: str, at: datetime) -> bool:
        """Record that the chat was told `key` (a spending limit reached in a period); True
        the first time, and again for the same turn (a retry of the turn that tells it)."""
        ...

    def chats(self) -> list[int]:
        """Every chat with recorded usage (for the operator)."""
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
        buttons: Sequence[str] = (),
    ) -> int:
        """Send one of `message_parts`, with inline `buttons` under it (each one's press comes
        back as the user's choice); returns its message id."""
        ...

    def remove_buttons(self, chat_id: int, message_id: int) -> bool:
        """Take the buttons off a message; False when it has none any more (a button of it was
        pressed before) or is gone."""
        ...

    def send_text(self, chat_id: int, text: str, *, thread_id: int | None = None) -> list[int]:
        """Send Markdown `text` in as many messages as it takes (not journaled)."""
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
        buttons: Sequence[str] = (),
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


# -- models --------------------------------------------------------------------------------


class ChatModel(Protocol):
    def complete(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        *,
        tool_choice: ToolChoice = None,
        timeout: float | None = None,
        on_text: TextStream | None = None,
    ) -> ModelReply:
        """One completion, within `timeout` seconds when given (fallbacks included).
        With `on_text`, the reply is streamed and its text so far given to `on_text` as it
        arrives; the reply returned is still the whole one. Raises ModelError when the
        provider (and every fallback) fails, mid-stream included."""
        ...


class Speaker(Protocol):
    def speak(self, text: str) -> Speech:
        """The Markdown `text` read aloud, as an OGG/Opus voice note. Raises ModelError on any
        failure, naming its kind and status, never the request."""
        ...


class Embedder(Protocol):
    def embed(self, texts: Sequence[str]) -> Embeddings:
        """One vector per text, unit length. Raises ModelError on any failure, naming its kind
        and status, never the texts."""
        ...


class TokenCounter(Protocol):
    context_window: int  # the model's input limit in tokens

    def count(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None
    ) -> int:
        """The input tokens of a request (messages and tool schemas), as the model's tokenizer
        counts them or close to it."""
        ...


class Transcriber(Protocol):
    def transcribe(self, filename: str, data: bytes) -> Transcript:
        """The speech in the audio as text. Raises ModelError on any failure, naming the kind
        and status of the failure, never the request."""
        ...


# -- telemetry -----------------------------------------------------------------------------


class MetricsPort(Protocol):
    def add(self, name: str, value: float, unit: str = "Count") -> None:
        """Add a value to the invocation's record."""
        ...

    def add_by(self, name: str, dimension: str, key: str, value: float) -> None:
        """Emit a count with one extra dimension (`dimension`=`key`)."""
        ...
