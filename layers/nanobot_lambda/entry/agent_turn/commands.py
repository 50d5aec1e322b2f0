"""Bot commands: /start, /help, /stop, /usage, /model and /think (the chat's model and how hard
it thinks, core/model_choice.py); the owner's /approve, /deny and /people (pairing, see
core/pairing.py); /new, /compact and /memory (memory_commands.py).

Their answers are not journaled: answering a command twice is harmless.

/stop cannot simply go through the turn queue: per-chat FIFO order would put it behind the very
turn it is meant to stop. So the webhook also raises a stop flag the moment it accepts /stop;
the running turn checks the flag between tool iterations, stops, and clears it. The queued /stop
then finds the flag cleared (the stopped turn has told the user) or still set (nothing was
running: it says so and clears it). Flags expire after an hour either way.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from nanobot_lambda.adapters.telegram.inbound import InboundMessage
from nanobot_lambda.core import texts
from nanobot_lambda.core.bot_commands import help_text
from nanobot_lambda.core.errors import ChannelError
from nanobot_lambda.core.model_choice import ModelMenu
from nanobot_lambda.core.pairing import Pairing
from nanobot_lambda.core.ports import Channel, SessionStore, StopFlags
from nanobot_lambda.core.usage import UsageMeter
from nanobot_lambda.entry.agent_turn.memory_commands import MEMORY_COMMANDS, MemoryCommands
from nanobot_lambda.entry.agent_turn.outbox import send_unjournaled

logger = logging.getLogger(__name__)

PAIRING_COMMANDS = ("approve", "deny", "people")


@dataclass(frozen=True, kw_only=True)
class CommandDeps:
    """What the commands answer from."""

    channel: Channel
    stop_flags: StopFlags
    memory: MemoryCommands  # /new, /compact, /memory
    meter: UsageMeter
    pairing: Pairing
    owner: int | None
    sessions: SessionStore  # where a chat's /model and /think choices are kept
    menu: ModelMenu  # the operator's presets and who may switch


class Commands:
    def __init__(self, deps: CommandDeps) -> None:
        self._channel = deps.channel
        self._stop_flags = deps.stop_flags
        self._memory = deps.memory
        self._meter = deps.meter
        self._pairing = deps.pairing
        self._owner = deps.owner
        self._sessions = deps.sessions
        self._menu = deps.menu

    def handle(self, inbound: InboundMessage) -> bool:
        """Answer the message if it is one of the commands; True when it was."""
        command = inbound.command
        if command == "start":
            self._answer(inbound, texts.load("start"))
        elif command == "help":
            self._answer(inbound, help_text())
        elif command == "stop":
            # A turn that was stopped cleared the flag and told the user; a flag still here
            # means nothing was running.
            if self._stop_flags.clear(inbound.session_key):
                self._answer(inbound, texts.load("nothing_to_stop"))
        elif command == "usage":
            # What everyone together spends is the owner's to see.
            everyone = self._owner is None or inbound.chat_id == self._owner
            self._answer(inbound, self._meter.report(inbound.chat_id, everyone=everyone))
        elif command in PAIRING_COMMANDS:
            self._pairing_command(inbound, command)
        elif command in ("model", "think"):
            self._choose(inbound, command)
        elif command in MEMORY_COMMANDS:
            self._memory.handle(inbound, command)
        else:
            return False
        return True

    def _pairing_command(self, inbound: InboundMessage, command: str) -> None:
        """Only in the owner's private chat: anyone else is told so."""
        if inbound.chat_type != "private" or inbound.sender_id != self._owner:
            self._answer(inbound, texts.load("pairing_owner_only"))
            return
        words = inbound.text.split(maxsplit=2)[1:]
        argument = " ".join(words)
        if command == "approve":
            answer, approved = self._pairing.approve(argument)
            self._answer(inbound, answer)
            if approved is not None:
                self._welcome(approved.user_id)
        elif command == "deny":
            self._answer(inbound, self._pairing.deny(argument))
        elif words and words[0].lower() == "remove":
            self._answer(inbound, self._pairing.remove(" ".join(words[1:])))
        else:
            self._answer(inbound, self._pairing.people())

    def _choose(self, inbound: InboundMessage, command: str) -> None:
        """/model and /think: the chat's choice, kept with its session (core/model_choice.py).
        Setting it again to the same is harmless, so a command delivered twice changes
        nothing more."""
        argument = " ".join(inbound.text.split()[1:2])
        preferences = self._sessions.load(inbound.session_key, 0).preferences
        allowed = self._menu.may_change(inbound.sender_id, self._owner)
        choose = self._menu.model_command if command == "model" else self._menu.think_command
        answer, chosen = choose(argument, preferences, allowed=allowed)
        if chosen is not None:
            self._sessions.set_preferences(inbound.session_key, chosen)
            logger.info(
                "chat model chosen",
                extra={
                    "chat_id": inbound.chat_id,
                    "preset": chosen.model_preset,
                    "thinking": chosen.thinking,
                },
            )
        self._answer(inbound, answer)

    def _welcome(self, user_id: int) -> None:
        try:
            send_unjournaled(self._channel, user_id, texts.load("pairing_welcome"))
        except ChannelError as error:  # e.g. they blocked the bot meanwhile: still approved
            logger.warning("could not welcome an approved person: %s", error)

    def _answer(self, inbound: InboundMessage, text: str) -> None:
        send_unjournaled(self._channel, inbound.chat_id, text, inbound.thread_id)
