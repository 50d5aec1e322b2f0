"""A Telegram message's turn: the user wrote to the bot.

Groups: the webhook queues every group message (it cannot know the bot's username); only those
addressed to the bot get a turn. The parts of an album are answered together, in the turn of
the first part taken from the queue (core/albums.py). A button pressed under one of the bot's
messages is a turn too, with the choice as the user's words; its keyboard is taken off first,
so a second press of it is not heard. A press Telegram could not have sent is refused here too,
though the webhook already refuses it: one with data the keyboard did not offer is ignored; one
in a private chat by someone else has no subject and never gets this far. Commands are
answered without the agent. Otherwise: files are fetched (while "typing…" shows), history is
recalled, the agent runs (in private chats its answer shows as a draft while it is written), the
answer is sent, and only then is the turn saved, so the session never holds an answer the user
did not see.

The turn works for the job's subject (core/subjects.py): in its scope (the files, the memory in
the prompt, recall), answering in its chat and topic (a press's: those of the message it was
under).
"""

from __future__ import annotations

import logging
from typing import Any

from nanobot_lambda.adapters.telegram.inbound import (
    Ignored,
    InboundMessage,
    RefusedPress,
    addressed_to_bot,
    is_group_chat,
    to_inbound,
)
from nanobot_lambda.adapters.telegram.media import UserContent
from nanobot_lambda.adapters.telegram.models import Message, Update
from nanobot_lambda.core.albums import album_key
from nanobot_lambda.core.context import RUNTIME_FIELD
from nanobot_lambda.core.jobs import TelegramUpdateJob
from nanobot_lambda.entry.agent_turn.parts import TurnParts
from nanobot_lambda.entry.agent_turn.run import RemainingMillis
from nanobot_lambda.entry.agent_turn.saving import consolidate_quietly

logger = logging.getLogger(__name__)


def telegram_turn(
    parts: TurnParts, job: TelegramUpdateJob, remaining_ms: RemainingMillis | None
) -> None:
    update = Update.model_validate(job.update)
    inbound = to_inbound(update)
    if isinstance(inbound, RefusedPress):
        # The webhook refuses these: a job queued before it did, or not by the webhook.
        logger.warning("queued button press refused: %s", inbound.reason)
        return
    if isinstance(inbound, Ignored):
        logger.info("queued update has nothing to answer: %s", inbound.reason)
        return
    subject = parts.subject  # the chat, topic and scope of `inbound` (subjects.py)
    log = {"update_id": inbound.update_id, "chat_id": subject.chat_id}
    message = update.message  # None for a button pressed (a callback query)
    album = [] if message is None else _album_of(parts, inbound, message, job.update)
    if message is not None and not album:
        logger.info("part of an album answered with the album: skipped", extra=log)
        return
    channel = parts.ports.services.channel
    if message is not None and is_group_chat(message):
        me = channel.get_me()  # asked once per container, for groups
        policy = parts.settings.group_policy
        if not any(
            addressed_to_bot(part, bot_id=me.id, bot_username=me.username, policy=policy)
            for part in album
        ):
            logger.info("group message not addressed to the bot: ignored", extra=log)
            return
    elif inbound.chat_type == "private":
        _remember_private_chat(parts, subject.chat_id)
    if parts.commands.handle(inbound):
        return
    key = inbound.session_key
    history, run = parts.starter.in_session(job, f"update-{inbound.update_id}", key, remaining_ms)
    if run is None:
        return
    pressed = inbound.callback_query_id is not None
    if pressed and not run.outbox.take_buttons_off(subject.chat_id, inbound.message_id):
        # The same keyboard's buttons were pressed twice before it went: one choice is heard.
        logger.info("button of a keyboard already answered: ignored", extra=log)
        return
    logger.info("turn started", extra=log)
    private = inbound.chat_type == "private"
    with (
        parts.scope(run, "user") as scope,
        channel.typing(scope.chat_id, thread_id=scope.thread_id),
        parts.drafts.streaming(run, scope.chat_id, scope.thread_id, private=private),
    ):
        # Files are fetched, stored and transcribed while "typing…" shows.
        content = (
            UserContent(inbound.text, inbound.text)
            if message is None
            else parts.media.resolve_album(album, scope.chat_id)
        )
        for notice in content.notices:  # e.g. a file too large to fetch: told at once
            run.outbox.send(scope.chat_id, notice, scope.thread_id)
        runtime = parts.runtime_block(
            run, scope.chat_id, recall_for=content.saved_text, history=history.messages
        )
        request = parts.request_that_fits(
            history, lambda past: parts.context.messages(past, content.model_content, runtime)
        )
        outcome = parts.runner.run(parts.agent, request, scope, run, log)
    if outcome is None:
        return
    if outcome.stopped:
        parts.ports.stores.stop_flags.clear(key)
    voice = any(part.voice is not None for part in album)
    if not parts.deliver_reply(run, scope, outcome, voice=voice):
        return
    parts.saver.save(history, _user_message(content.saved_text, runtime, inbound), outcome, run)
    logger.info(
        "turn finished",
        extra={
            **log,
            "iterations": outcome.iterations,
            "tool_calls": outcome.tool_calls,
            "prompt_tokens": outcome.usage.prompt_tokens,
            "completion_tokens": outcome.usage.completion_tokens,
        },
    )
    if parts.consolidator.due(history):
        consolidate_quietly(parts.consolidator, key)


def _album_of(
    parts: TurnParts, inbound: InboundMessage, message: Message, update: dict[str, Any]
) -> list[Message]:
    """The messages this message's turn answers: itself, or for a part of an album (a media
    group) the album's parts, or none when another part's turn answers it (core/albums.py)."""
    if message.media_group_id is None:
        return [message]
    key = album_key(inbound.session_key, message.media_group_id)
    updates = parts.albums.to_answer(key, inbound.update_id, update)
    return [
        part.message
        for part in (Update.model_validate(each) for each in updates)
        if part.message is not None
    ]


def _remember_private_chat(parts: TurnParts, chat_id: int) -> None:
    """Note the owner's private chat for the heartbeat (once per container and chat). The
    heartbeat works in the owner's workspace: another person's chat is never its target."""
    owner = parts.settings.owner
    if owner is not None and chat_id != owner:
        return
    if parts.remembered_private_chat != chat_id:
        parts.ports.stores.jobs.remember_private_chat(chat_id)
        parts.remembered_private_chat = chat_id


def _user_message(text: str, runtime: str, inbound: InboundMessage) -> dict[str, Any]:
    """The user message as saved: its text (with placeholders for files, never their bytes),
    and apart from it the runtime-context block it was sent with."""
    return {
        "role": "user",
        "content": text,
        RUNTIME_FIELD: runtime,
        "message_id": inbound.message_id,
        "update_id": inbound.update_id,
    }
