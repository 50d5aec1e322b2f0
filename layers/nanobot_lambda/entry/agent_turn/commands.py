"""Bot commands: /start, /help, /stop, /usage (with the reactions to the chat's answers,
core/feedback.py), /model and /think (the chat's model and how hard it thinks,
core/model_choice.py); /new, /compact and /memory (memory_commands.py); and the owner's
/approve, /deny and /people (pairing, see core/pairing.py) and /hooks (event hooks,
core/hooks.py: a hook's secret is sent once, never journaled, saved or logged; one made in a
group has it sent to the owner's private chat only).

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
from nanobot_lambda.core.feedback import FeedbackBook, feedback_line
from nanobot_lambda.core.hooks import HookCommands
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
    hooks: HookCommands  # /hooks
    feedback: FeedbackBook  # the reactions /usage shows


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
        self._hooks = deps.hooks
        self._feedback = deps.feedback

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
            report = self._meter.report(inbound.chat_id, everyone=everyone)
            reactions = feedback_line(self._feedback.reactions(inbound.chat_id))
            self._answer(inbound, f"{report}\n\n{reactions}")
        elif command in PAIRING_COMMANDS:
            self._pairing_command(inbound, command)
        elif command in ("model", "think"):
            self._choose(inbound, command)
        elif command == "hooks":
            self._hooks_command(inbound)
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

    def _hooks_command(self, inbound: InboundMessage) -> None:
        """/hooks: the owner's. The answer to `add` holds the hook's secret: sent as it is,
        unjournaled, never saved or logged; from a group, to the owner's private chat only."""
        arguments = " ".join(inbound.text.split()[1:])
        reply = self._hooks.answer(
            arguments,
            chat_id=inbound.chat_id,
            thread_id=inbound.thread_id,
            sender_id=inbound.sender_id,
            is_owner=self._owner is not None and inbound.sender_id == self._owner,
            private=inbound.chat_type == "private",
        )
        if reply.to_owner is not None and self._owner is not None:
            try:
                delivered = send_unjournaled(self._channel, self._owner, reply.to_owner)
            except ChannelError as error:
                logger.warning("could not send a hook's secret to the owner: %s", error.kind)
                delivered = False
            if not delivered:  # e.g. no private chat with the bot yet
                self._answer(inbound, texts.load("hooks_secret_not_sent"))
                return
        self._answer(inbound, reply.here)

    def _welcome(self, user_id: int) -> None:
        try:
            send_unjournaled(self._channel, user_id, texts.load("pairing_welcome"))
        except ChannelError as error:  # e.g. they blocked the bot meanwhile: still approved
            logger.warning("could not welcome an approved person: %s", error)

    def _answer(self, inbound: InboundMessage, text: str) -> None:
        send_unjournaled(self._channel, inbound.chat_id, text, inbound.thread_id)
