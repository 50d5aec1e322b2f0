"""The memory commands: /new, /compact, /memory and /memory restore N (commands.py hands them
here).

/new archives the whole conversation into memory and starts afresh; on failure the conversation
is kept as it is.

/compact summarises the conversation now rather than when it has grown (core/consolidation.py):
everything since the last summary but the newest `COMPACT_KEEP_EXCHANGES` exchanges, which the
model keeps seeing word for word. The answer says how many messages were summarised, or that
there was nothing to; the chat is told, so no compaction notice follows.

/memory lists the recent versions of the chat's own MEMORY.md, and /memory restore N writes
version N back (core/memory_versions.py). "The chat's own" is its scope's (core/scopes.py): the
owner's workspace in the owner's private chat, a person's own scope in theirs, the group's in a
group, where only the owner may see or restore it (a group's memory is shared by everyone in
it; a member who could restore it could also erase what others told the bot). A restore names
its command's update (`update-<id>`), so the queue delivering the command again restores
nothing twice. A bucket that fails raises: SQS runs the command again.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from zoneinfo import ZoneInfo

from nanobot_lambda.adapters.telegram.inbound import InboundMessage
from nanobot_lambda.core import texts
from nanobot_lambda.core.consolidation import ConsolidationError
from nanobot_lambda.core.memory_versions import (
    VersionedFiles,
    describe_versions,
    restore_version,
    versions_text,
)
from nanobot_lambda.core.ports import Channel
from nanobot_lambda.core.scopes import Scope
from nanobot_lambda.functions.agent_turn.consolidation import Consolidation
from nanobot_lambda.functions.agent_turn.outbox import send_unjournaled
from nanobot_lambda.tools.context import JobContext

logger = logging.getLogger(__name__)

MEMORY_COMMANDS = ("new", "compact", "memory")
COMPACT_KEEP_EXCHANGES = 2  # the newest exchanges /compact leaves as they are


class MemoryCommands:
    def __init__(
        self,
        channel: Channel,
        consolidation: Consolidation,
        versioned: Callable[[Scope], VersionedFiles],
        *,
        owner: int | None,
        timezone: str,
    ) -> None:
        self._channel = channel
        self._consolidation = consolidation
        self._versioned = versioned  # a scope's files, with their versions
        self._owner = owner
        self._zone = ZoneInfo(timezone)

    def handle(self, ctx: JobContext, inbound: InboundMessage, command: str) -> None:
        """The command, for the job of `ctx` (its scope, its chat's model and meter)."""
        if command == "new":
            self._new_session(ctx, inbound)
        elif command == "compact":
            self._compact(ctx, inbound)
        else:
            self._memory(ctx, inbound)

    def _new_session(self, ctx: JobContext, inbound: InboundMessage) -> None:
        """/new: archive the conversation into memory, then start afresh; keep it on failure."""
        consolidator = self._consolidation.of(ctx)
        with self._channel.typing(inbound.chat_id, thread_id=inbound.thread_id):
            try:
                consolidator.consolidate(inbound.session_key, everything=True, noticed=True)
            except ConsolidationError as error:
                logger.warning("/new: archiving failed, session kept: %s", error)
                self._answer(inbound, texts.load("new_session_failed"))
                return
        self._answer(inbound, texts.load("new_session"))

    def _compact(self, ctx: JobContext, inbound: InboundMessage) -> None:
        consolidator = self._consolidation.of(ctx)
        with self._channel.typing(inbound.chat_id, thread_id=inbound.thread_id):
            try:
                done = consolidator.consolidate(
                    inbound.session_key, keep_exchanges=COMPACT_KEEP_EXCHANGES, noticed=True
                )
            except ConsolidationError as error:
                logger.warning("/compact: summarising failed, session kept: %s", error)
                self._answer(inbound, texts.load("compact_failed"))
                return
        if done is None:
            self._answer(inbound, texts.load("compact_nothing"))
        else:
            self._answer(inbound, texts.render("compact_done", count=str(done.end - done.start)))

    def _memory(self, ctx: JobContext, inbound: InboundMessage) -> None:
        if inbound.chat_type != "private" and inbound.sender_id != self._owner:
            self._answer(inbound, texts.load("memory_owner_only"))
            return
        files = self._versioned(ctx.subject.scope)
        words = inbound.text.split()[1:]
        if words and words[0].lower() == "restore":
            number = words[1] if len(words) > 1 else ""
            answer = restore_version(files, number, request=f"update-{inbound.update_id}")
        else:
            answer = versions_text(describe_versions(files), self._zone)
        self._answer(inbound, answer)

    def _answer(self, inbound: InboundMessage, text: str) -> None:
        send_unjournaled(self._channel, inbound.chat_id, text, inbound.thread_id)
