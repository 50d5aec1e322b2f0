"""Delivering a turn's answer: the one step called "deliver" in agent_turn (turn.py's step 5).

The answer goes through the run's outbox, once across runs of the turn; to a voice note, when
voice replies are on, it is read aloud after it. A turn a spending limit ended says so instead,
once per limit and period (spending.py): a notice the chat was given before is not repeated.

A final answer in several parts, or followed by a voice note, is recorded (checkpointed)
before its first part, so that a retry finishes that answer instead of asking the model for
another one; its last part is recorded by the write that saves the turn, or at once when a
voice note follows it.

The compaction notice (`tell_compaction`): when consolidation summarised earlier conversation
since the chat was last told (core/sessions.py: `noticed_upto`), one short line goes out
through the run's outbox before the turn's first step, and the turn's save records that it was
told, and when (`noticed_at`). Consolidation after a reply announces itself this way, in the
next answered turn (the turn it ran after is closed by then); consolidation before a request, in
that very turn. It is sent once: a run that dies before the save sends it again as the same
message of the same turn (the outbox skips it), and a run resumed from a record was past it
already. And at most once per COMPACTION_NOTICE_INTERVAL_HOURS: a notice due sooner after the
last one stays due, and the first turn after the interval tells it (one line for every summary
made meanwhile).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime, timedelta

from nanobot_lambda.core import texts
from nanobot_lambda.core.agent import TurnOutcome
from nanobot_lambda.core.errors import ChannelError, ModelError
from nanobot_lambda.core.outgoing import OutgoingFile
from nanobot_lambda.core.ports import Speaker, TurnJournal
from nanobot_lambda.core.sessions import SessionHistory
from nanobot_lambda.functions.agent_turn.spending import SpendNotices
from nanobot_lambda.functions.agent_turn.turn_run import TurnRun, checkpoint
from nanobot_lambda.tools.context import JobContext

logger = logging.getLogger(__name__)

VOICE_REPLY_NAME = "answer.ogg"


class Delivery:
    def __init__(
        self,
        journal: TurnJournal,
        spend_notices: SpendNotices,
        speaker: Speaker | None,  # metered for each job: its chat pays, within its limits
        clock: Callable[[], datetime],
        *,
        compaction_notice: bool = False,
        compaction_notice_interval: timedelta = timedelta(0),
    ) -> None:
        self._journal = journal
        self._spend_notices = spend_notices
        self._speaker = speaker  # None: voice replies are off (TTS_MODEL)
        self._clock = clock
        self._compaction_notice = compaction_notice  # COMPACTION_NOTICE
        self._notice_interval = compaction_notice_interval  # COMPACTION_NOTICE_INTERVAL_HOURS

    def tell_compaction(self, ctx: JobContext, run: TurnRun, history: SessionHistory) -> None:
        """Tell the chat that earlier conversation was summarised, if it was since it was last
        told and that was at least the interval ago; the turn's save records it (see the
        module's docstring)."""
        if not (self._compaction_notice and history.summarised_unnoticed):
            return
        now = self._clock()
        if history.noticed_at is not None and now - history.noticed_at < self._notice_interval:
            return  # told lately: the notice stays due until the interval has passed
        if not run.progress.messages and run.progress.iterations == 0:  # no record past it
            run.outbox.send(ctx.chat_id, texts.load("compaction_notice"), ctx.thread_id)
        history.noticed_upto = run.noticed_upto = history.consolidated_upto
        history.noticed_at = run.noticed_at = now

    def deliver(
        self, ctx: JobContext, run: TurnRun, outcome: TurnOutcome, *, voice: bool = False
    ) -> bool:
        """The final answer; with `voice` (the user spoke) and voice replies on, read aloud
        after it too. A turn a spending limit ended says so once (its turn is saved anyway).
        False if the chat blocked the bot (nothing to save: the user saw nothing)."""
        if outcome.limited is not None and not self._spend_notices.tell(ctx, run, outcome.limited):
            return True
        speaker = ctx.meter.metered_speaker(self._speaker) if voice else None
        if not self._send_answer(ctx, run, outcome, more_follows=speaker is not None):
            return False
        if speaker is not None:
            _send_voice(speaker, ctx, run, outcome.reply)
        return True

    def _send_answer(
        self, ctx: JobContext, run: TurnRun, outcome: TurnOutcome, *, more_follows: bool
    ) -> bool:
        """The turn's final answer, unless the message tool already sent this very text here.
        Its last part is recorded as sent by the transaction that saves the turn (or, for a
        turn that saves no session, by the record that it is done); with `more_follows`
        (something is sent after it, before the save), at once. False if the chat blocked the
        bot."""
        text = outcome.reply
        if (ctx.chat_id, text.strip()) in ctx.notes.sent:
            logger.info("final answer already sent with the message tool")
            return True
        several_parts = len(run.outbox.parts(text)) > 1
        if (several_parts or more_follows) and run.progress.messages != outcome.new_messages:
            # Recorded before its first part: a retry finishes this answer, not another one.
            checkpoint(self._journal, run, outcome)
        return run.outbox.send(
            ctx.chat_id,
            text,
            ctx.thread_id,
            record=more_follows,
            buttons=ctx.notes.reply_buttons,
        )


def _send_voice(speaker: Speaker, ctx: JobContext, run: TurnRun, text: str) -> None:
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
        run.outbox.send_file(ctx.chat_id, voice, ctx.thread_id)
    except ChannelError as error:
        if not error.refused:
            raise  # worth the job's retry: the text is recorded, only the voice goes again
        logger.warning("voice reply refused by the channel: %s", error)
