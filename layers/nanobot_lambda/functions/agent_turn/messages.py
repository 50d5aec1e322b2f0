"""A Telegram message's turn: the user wrote to the bot.

Groups: the webhook queues every group message (it cannot know the bot's username); only those
addressed to the bot get a turn. The parts of an album are answered together, in the turn of
the first part taken from the queue (core/albums.py). A button pressed under one of the bot's
messages is a turn too, with the choice as the user's words; its keyboard is taken off first,
so a second press of it is not heard. A press Telegram could not have sent is refused here too,
though the webhook already refuses it: one with data the keyboard did not offer is ignored; one
in a private chat by someone else has no subject and never gets this far. Commands are
answered without the agent. An edit of a message (core/reactions_and_edits.py) is a turn too: a
message edited before its turn ran is answered as it reads now (its latest edit, recorded by the
webhook, replaces its text); the edit's own turn then finds it answered with that text and ends
without a model call. An edit of an answered message is a short turn that says what it said
(as the last turn that answered it saw it) and what it says now; an edit sent again, or one of
the formatting only, finds that turn saw its text and asks nothing. In groups, an edit is
answered when the message as edited is addressed to the bot. Otherwise the turn runs its steps
(turn.py): files are fetched (while "typing…" shows), history is recalled, the agent runs (in
private chats its answer shows as a draft while it is written), the answer is sent, and only
then is the turn saved, so the session never holds an answer the user did not see.

The turn works for the job's subject (core/subjects.py), from the job's context
(tools/context.py): in its scope (the files, the memory in the prompt, recall), answering in its
chat and topic (a press's: those of the message it was under). Its message is the context's, read
once from the queued update (queued.py).
"""

from __future__ import annotations

import logging
from contextlib import AbstractContextManager, ExitStack
from typing import Any

from nanobot_lambda.adapters.telegram.addressing import addressed_to_bot, is_group_chat
from nanobot_lambda.adapters.telegram.inbound import InboundMessage
from nanobot_lambda.adapters.telegram.media import MediaResolver, UserContent
from nanobot_lambda.adapters.telegram.models import Message, Update
from nanobot_lambda.adapters.telegram.places import Ignored, RefusedPress
from nanobot_lambda.adapters.telegram.reactions_and_edits import as_edited, edit_of
from nanobot_lambda.core.agent import TurnOutcome
from nanobot_lambda.core.albums import album_key
from nanobot_lambda.core.context import RUNTIME_FIELD
from nanobot_lambda.core.jobs import TelegramUpdateJob
from nanobot_lambda.core.reactions_and_edits import (
    EDIT_DATE_FIELD,
    EDIT_TEXT_FIELD,
    EDITED_FIELD,
    Edit,
    answered_message,
    edit_turn,
)
from nanobot_lambda.core.sessions import SessionHistory
from nanobot_lambda.functions.agent_turn.queued import QueuedJob
from nanobot_lambda.functions.agent_turn.turn import JobTurn, Request
from nanobot_lambda.functions.agent_turn.turn_run import Opening, TurnRun
from nanobot_lambda.tools.context import JobContext

logger = logging.getLogger(__name__)


class MessageTurn(JobTurn[TelegramUpdateJob]):
    origin = "user"
    apologise = True  # the user waits for an answer: a model failure is told

    def recorded_at(self, queued: QueuedJob) -> Opening | None:
        inbound = queued.inbound
        return None if inbound is None or isinstance(inbound, Ignored) else _opening_of(inbound)

    def open(self, ctx: JobContext) -> Opening | None:
        deps, update, inbound = self.deps, ctx.update, ctx.inbound
        if isinstance(inbound, RefusedPress):
            # The webhook refuses these: a job queued before it did, or not by the webhook.
            logger.warning("queued button press refused: %s", inbound.reason)
            return None
        if isinstance(inbound, Ignored):
            logger.info("queued update has nothing to answer: %s", inbound.reason)
            return None
        # A job has a subject only when its update was read (kinds.py): both are here.
        assert inbound is not None and update is not None
        self.inbound = inbound
        subject = ctx.subject  # the chat, topic and scope of `inbound`
        self.log = {"update_id": inbound.update_id, "chat_id": subject.chat_id}
        message = update.message  # None for a button pressed (a callback query) or an edit
        self.album = [] if message is None else self._album_of(inbound, message)
        if message is not None and not self.album:
            logger.info("part of an album answered with the album: skipped", extra=self.log)
            return None
        # The group policy judges the message as sent, an edit as it reads now.
        judged = self.album if update.edited_message is None else [update.edited_message]
        if judged and is_group_chat(judged[0]):
            me = deps.ports.services.channel.get_me()  # asked once per container, for groups
            policy = deps.settings.group_policy
            if not any(
                addressed_to_bot(part, bot_id=me.id, bot_username=me.username, policy=policy)
                for part in judged
            ):
                logger.info("group message not addressed to the bot: ignored", extra=self.log)
                return None
        elif inbound.chat_type == "private":
            deps.owner_chat.private_chat(subject.chat_id)
        if deps.commands.handle(ctx, inbound):
            return None
        # The edit whose text this turn answers: the latest one its message took, or the edit
        # that is this turn.
        self.took_edit = edit_of(update) if inbound.edited else self._take_edits()
        return _opening_of(inbound)

    def ready(self, ctx: JobContext, run: TurnRun) -> bool:
        inbound = self.inbound
        pressed = inbound.callback_query_id is not None
        if pressed and not run.outbox.take_buttons_off(ctx.chat_id, inbound.message_id):
            # The same keyboard's buttons were pressed twice before it went: one choice is heard.
            logger.info("button of a keyboard already answered: ignored", extra=self.log)
            return False
        logger.info("turn started", extra=self.log)
        return True

    def showing(self, ctx: JobContext, run: TurnRun) -> AbstractContextManager[object]:
        """ "typing…" while the turn works; in a private chat, the answer as a draft as it is
        written."""
        showing = ExitStack()
        showing.enter_context(
            self.deps.ports.services.channel.typing(ctx.chat_id, thread_id=ctx.thread_id)
        )
        private = self.inbound.chat_type == "private"
        showing.enter_context(
            self.deps.drafts.streaming(run, ctx.chat_id, ctx.thread_id, private=private)
        )
        return showing

    def request(
        self, ctx: JobContext, run: TurnRun, history: SessionHistory | None
    ) -> Request | None:
        assert history is not None
        deps = self.deps
        text = self.inbound.text
        if self.inbound.edited:
            said = self._edit_turn_text(history)
            if said is None:
                logger.info("edit answered with its message: nothing to add", extra=self.log)
                return None
            text = said
        # Files are fetched, stored and transcribed while "typing…" shows.
        content = (
            UserContent(text, text)
            if not self.album
            else self._media(ctx).resolve_album(self.album, ctx.chat_id)
        )
        for notice in content.notices:  # e.g. a file too large to fetch: told at once
            run.outbox.send(ctx.chat_id, notice, ctx.thread_id)
        runtime = deps.requests.runtime_block(
            ctx, run, recall_for=content.saved_text, history=history.messages
        )
        messages = deps.requests.that_fits(
            ctx,
            history,
            lambda past: deps.context.messages(ctx.workspace, past, content.model_content, runtime),
        )
        saved = _user_message(content.saved_text, runtime, self.inbound, self.took_edit)
        return Request(messages, deps.loops.chat(ctx), saved)

    def _media(self, ctx: JobContext) -> MediaResolver:
        """The message's files, stored in the job's scope, transcribed at its chat's cost; the
        documents' text noted for recall (after the reply: turn.py)."""
        services = self.deps.ports.services
        return MediaResolver(
            services.media,
            ctx.workspace,
            self.deps.settings,
            ctx.meter.metered_transcriber(services.transcriber),
            on_document=lambda path, text: self.documents.append((path, text)),
        )

    def deliver(self, ctx: JobContext, run: TurnRun, outcome: TurnOutcome) -> bool:
        if outcome.stopped:
            self.deps.ports.stores.stop_flags.clear(self.inbound.session_key)
        voice = any(part.voice is not None for part in self.album)
        return self.deps.delivery.deliver(ctx, run, outcome, voice=voice)

    def finished(self, ctx: JobContext, run: TurnRun, outcome: TurnOutcome) -> None:
        logger.info(
            "turn finished",
            extra={
                **self.log,
                "iterations": outcome.iterations,
                "tool_calls": outcome.tool_calls,
                "prompt_tokens": outcome.usage.prompt_tokens,
                "completion_tokens": outcome.usage.completion_tokens,
            },
        )

    def _take_edits(self) -> Edit | None:
        """A message edited before its turn ran is answered as it reads now: each part its
        latest edit (recorded by the webhook before it queued the edit). The latest edit
        taken, if any, for the saved message."""
        if not self.album or self.inbound.command is not None:
            return None  # a press or an edit has no message to replace; a command is as sent
        book, key = self.deps.ports.stores.feedback, self.inbound.session_key
        taken: Edit | None = None
        parts = []
        for part in self.album:
            edit = book.latest_edit(key, part.message_id)
            if edit is not None:
                part = as_edited(part, edit)
                taken = edit if taken is None or edit.edit_date > taken.edit_date else taken
            parts.append(part)
        if taken is not None:
            logger.info("message edited before its turn: answered as it reads now", extra=self.log)
        self.album = parts
        return taken

    def _edit_turn_text(self, history: SessionHistory) -> str | None:
        """The short turn of an edit: what the message said (as the last turn that answered it
        saw it) and what it says now; None when that turn saw it as it reads now."""
        edit = self.took_edit
        assert edit is not None, "to_inbound hears only an edit it can read"
        return edit_turn(answered_message(history.messages, edit.message_id), edit)

    def _album_of(self, inbound: InboundMessage, message: Message) -> list[Message]:
        """The messages this message's turn answers: itself, or for a part of an album (a media
        group) the album's parts, or none when another part's turn answers it
        (core/albums.py)."""
        if message.media_group_id is None:
            return [message]
        key = album_key(inbound.session_key, message.media_group_id)
        updates = self.deps.albums.to_answer(key, inbound.update_id, self.job.update)
        return [
            part.message
            for part in (Update.model_validate(each) for each in updates)
            if part.message is not None
        ]


def _user_message(
    text: str, runtime: str, inbound: InboundMessage, took_edit: Edit | None
) -> dict[str, Any]:
    """The user message as saved: its text (with placeholders for files, never their bytes),
    and apart from it the runtime-context block it was sent with. A message answered as an
    edit left it keeps that edit's time; an edit's short turn is marked edited and keeps the
    edit's time and text (what the next edit's turn compares with)."""
    saved: dict[str, Any] = {
        "role": "user",
        "content": text,
        RUNTIME_FIELD: runtime,
        "message_id": inbound.message_id,
        "update_id": inbound.update_id,
    }
    if took_edit is not None:
        saved[EDIT_DATE_FIELD] = took_edit.edit_date
    if inbound.edited:
        saved[EDITED_FIELD] = True
        if took_edit is not None:
            saved[EDIT_TEXT_FIELD] = took_edit.text
    return saved


def _opening_of(inbound: InboundMessage) -> Opening:
    """A message's turn: its id from the update, saved into the session of its chat (and topic)."""
    return Opening(f"update-{inbound.update_id}", inbound.session_key)
