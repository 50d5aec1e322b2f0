"""Bot commands: /start, /help, /new, /stop, /usage.

Their answers are not journaled: answering a command twice is harmless.

/stop cannot simply go through the turn queue: per-chat FIFO order would put it behind the very
turn it is meant to stop. So the webhook also raises a stop flag the moment it accepts /stop;
the running turn checks the flag between tool iterations, stops, and clears it. The queued /stop
then finds the flag cleared (the stopped turn has told the user) or still set (nothing was
running: it says so and clears it). Flags expire after an hour either way.
"""

from __future__ import annotations

import logging

from nanobot_lambda.adapters.telegram.inbound import InboundMessage
from nanobot_lambda.core import texts
from nanobot_lambda.core.bot_commands import help_text
from nanobot_lambda.core.consolidation import ConsolidationError, Consolidator
from nanobot_lambda.core.ports import Channel, StopFlags
from nanobot_lambda.core.usage import UsageMeter
from nanobot_lambda.entry.agent_turn.outbox import deliver

logger = logging.getLogger(__name__)


class Commands:
    def __init__(
        self,
        channel: Channel,
        stop_flags: StopFlags,
        consolidator: Consolidator,
        meter: UsageMeter,
    ) -> None:
        self._channel = channel
        self._stop_flags = stop_flags
        self._consolidator = consolidator
        self._meter = meter

    def handle(self, inbound: InboundMessage) -> bool:
        """Answer the message if it is one of the commands; True when it was."""
        command = inbound.command
        if command == "start":
            self._answer(inbound, texts.load("start"))
        elif command == "help":
            self._answer(inbound, help_text())
        elif command == "new":
            self._new_session(inbound)
        elif command == "stop":
            # A turn that was stopped cleared the flag and told the user; a flag still here
            # means nothing was running.
            if self._stop_flags.clear(inbound.session_key):
                self._answer(inbound, texts.load("nothing_to_stop"))
        elif command == "usage":
            self._answer(inbound, self._meter.report(inbound.chat_id))
        else:
            return False
        return True

    def _answer(self, inbound: InboundMessage, text: str) -> None:
        deliver(self._channel, inbound.chat_id, text, inbound.thread_id)

    def _new_session(self, inbound: InboundMessage) -> None:
        """/new: archive the conversation into memory, then start afresh; keep it on failure."""
        with self._channel.typing(inbound.chat_id, thread_id=inbound.thread_id):
            try:
                self._consolidator.consolidate(inbound.session_key, everything=True)
            except ConsolidationError as error:
                logger.warning("/new: archiving failed, session kept: %s", error)
                self._answer(inbound, texts.load("new_session_failed"))
                return
        self._answer(inbound, texts.load("new_session"))
