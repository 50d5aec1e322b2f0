"""The final answer of a turn: sent through the turn's outbox, once; and, to a voice note
when voice replies are on, the answer read aloud after it.

A final answer in several parts, or followed by a voice note, is recorded (checkpointed)
before its first part, so that a retry finishes that answer instead of asking the model for
another one; its last part is recorded by the write that saves the turn, or at once when a
voice note follows it.
"""

from __future__ import annotations

import logging

from nanobot_lambda.core.agent import TurnOutcome
from nanobot_lambda.core.errors import ChannelError, ModelError
from nanobot_lambda.core.outgoing import OutgoingFile
from nanobot_lambda.core.ports import Speaker, TurnJournal
from nanobot_lambda.entry.agent_turn.run import TurnRun, checkpoint
from nanobot_lambda.tools.chat import TurnScope

logger = logging.getLogger(__name__)


def deliver_reply(
    journal: TurnJournal,
    run: TurnRun,
    scope: TurnScope,
    outcome: TurnOutcome,
    *,
    more_follows: bool = False,
) -> bool:
    """The turn's final answer, unless the message tool already sent this very text here.
    Its last part is recorded as sent by the transaction that saves the turn (or, for a turn
    that saves no session, by the record that it is done); with `more_follows` (something is
    sent after it, before the save), at once. False if the chat blocked the bot."""
    text = outcome.reply
    if (scope.chat_id, text.strip()) in scope.sent:
        logger.info("final answer already sent with the message tool")
        return True
    several_parts = len(run.outbox.parts(text)) > 1
    if (several_parts or more_follows) and run.progress.messages != outcome.new_messages:
        # Recorded before its first part: a retry finishes this answer, not another one.
        checkpoint(journal, run, outcome)
    return run.outbox.send(
        scope.chat_id, text, scope.thread_id, record=more_follows, buttons=scope.reply_buttons
    )


VOICE_REPLY_NAME = "answer.ogg"


def send_voice_reply(speaker: Speaker, run: TurnRun, scope: TurnScope, text: str) -> None:
    """The answer read aloud, as a voice note after the text (which stays the record). It is
    journaled like any message; a speech failure, or Telegram refusing the audio, costs only
    the voice note."""
    try:
        audio = speaker.speak(text).audio
    except ModelError as error:
        logger.warning("voice reply skipped: %s", error)
        return
    voice = OutgoingFile(VOICE_REPLY_NAME, audio, "voice")
    try:
        run.outbox.send_file(scope.chat_id, voice, scope.thread_id)
    except ChannelError as error:
        if error.status is None or error.status >= 500 or error.status == 429:
            raise  # worth the job's retry: the text is recorded, only the voice goes again
        logger.warning("voice reply refused by the channel: %s", error)
