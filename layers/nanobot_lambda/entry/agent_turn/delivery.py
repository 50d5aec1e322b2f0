"""The final answer of a turn: sent through the turn's outbox, once.

A final answer in several parts is recorded (checkpointed) before its first part, so that a
retry finishes that answer instead of asking the model for another one; its last part is
recorded by the write that saves the turn.
"""

from __future__ import annotations

import logging

from nanobot_lambda.core.agent import TurnOutcome
from nanobot_lambda.core.ports import TurnJournal
from nanobot_lambda.entry.agent_turn.run import TurnRun, checkpoint
from nanobot_lambda.tools.chat import TurnScope

logger = logging.getLogger(__name__)


def deliver_reply(
    journal: TurnJournal, run: TurnRun, scope: TurnScope, outcome: TurnOutcome
) -> bool:
    """The turn's final answer, unless the message tool already sent this very text here.
    Its last part is recorded as sent by the transaction that saves the turn (or, for a turn
    that saves no session, by the record that it is done). False if the chat blocked the bot."""
    text = outcome.reply
    if (scope.chat_id, text.strip()) in scope.sent:
        logger.info("final answer already sent with the message tool")
        return True
    several_parts = len(run.outbox.parts(text)) > 1
    if several_parts and run.progress.messages != outcome.new_messages:
        # Recorded before its first part: a retry finishes this answer, not another one.
        checkpoint(journal, run, outcome)
    return run.outbox.send(scope.chat_id, text, scope.thread_id, record=False)
