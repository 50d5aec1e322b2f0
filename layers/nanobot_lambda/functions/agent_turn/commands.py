"""Bot commands: /start, /help, /stop, /usage (with the reactions to the chat's answers,
core/reactions_and_edits.py), /model and /think (the chat's model and how hard it thinks,
core/model_choice.py); /new, /compact and /memory (memory_commands.py); /console (a button
that opens the console, the Mini App: in a private chat only, where Telegram shows one); and the
owner's /approve, /deny and /people (pairing, see core/pairing.py), /invite (invite links,
core/invites.py) and /hooks (event hooks, core/inbound_events.py).

Their answers are not journaled: answering a command twice is harmless. /hooks is the
exception: the answer to `/hooks add` shows the new hook's secret, once, and SQS may run its
update again (an invocation that died after the hook was stored). So /hooks answers through the
turn journal (core/journal.py), under the update's turn id and a journal key of its own
(`hooks-command:<chat id>`, never a session's): a run after Telegram accepted a message sends it
no more, a run before sends it (the hook made by the same update answers with its stored secret,
core/inbound_events.py), and once everything is sent the record is marked done, so a later run sends
nothing and changes no hook. The message holding the secret is recorded as a note
(`hooks_secret_recorded`), never its text (its identity is a digest); one made in a group has
it sent to the owner's private chat only, and the group is told when that chat refuses it.

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
from nanobot_lambda.core.approvals import ApprovalBook, Permission
from nanobot_lambda.core.bot_commands import help_text
from nanobot_lambda.core.errors import ChannelError
from nanobot_lambda.core.inbound_events import HookCommands
from nanobot_lambda.core.invites import Invites
from nanobot_lambda.core.model_choice import ModelMenu
from nanobot_lambda.core.pairing import Pairing
from nanobot_lambda.core.ports import Channel, SessionStore, StopFlags, TurnJournal
from nanobot_lambda.core.reactions_and_edits import (
    FeedbackBook,
    feedback_line,
    reactions_to_answers,
)
from nanobot_lambda.core.usage import UsageMeter
from nanobot_lambda.functions.agent_turn.memory_commands import MEMORY_COMMANDS, MemoryCommands
from nanobot_lambda.functions.agent_turn.outbox import JournaledOutbox, send_unjournaled
from nanobot_lambda.tools.context import JobContext

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
    journal: TurnJournal  # where /hooks records what it sent
    feedback: FeedbackBook  # the reactions /usage shows
    approvals: ApprovalBook  # the standing permissions /approvals lists
    console_url: str | None = None  # the console's page (CONSOLE_URL); None: not deployed
    invites: Invites | None = None  # /invite (core/invites.py); None: no invite links


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
        self._journal = deps.journal
        self._feedback = deps.feedback
        self._approvals = deps.approvals
        self._console_url = deps.console_url
        self._invites = deps.invites

    def handle(self, ctx: JobContext, inbound: InboundMessage) -> bool:
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
            reactions = feedback_line(reactions_to_answers(self._feedback, inbound.chat_id))
            self._answer(inbound, f"{report}\n\n{reactions}")
        elif command in PAIRING_COMMANDS:
            self._pairing_command(inbound, command)
        elif command == "invite" and self._invites is not None:
            self._answer(inbound, self._invite(inbound, self._invites))
        elif command in ("model", "think"):
            self._choose(inbound, command)
        elif command == "hooks":
            self._hooks_command(inbound)
        elif command == "approvals":
            self._approvals_command(inbound)
        elif command == "console":
            self._console(inbound)
        elif command in MEMORY_COMMANDS:
            self._memory.handle(ctx, inbound, command)
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

    def _approvals_command(self, inbound: InboundMessage) -> None:
        """/approvals lists the standing permissions ("Always allow here", core/approvals.py),
        numbered; /approvals revoke N takes one back. The owner's private chat only."""
        if inbound.chat_type != "private" or inbound.sender_id != self._owner:
            self._answer(inbound, texts.load("approvals_owner_only"))
            return
        permissions = self._approvals.permissions()
        words = inbound.text.split()[1:]
        if words and words[0].lower() == "revoke":
            number = words[1] if len(words) > 1 else ""
            if not number.isdigit() or not 1 <= int(number) <= len(permissions):
                self._answer(inbound, texts.load("approvals_revoke_usage"))
                return
            taken = permissions[int(number) - 1]
            self._approvals.revoke(taken.scope, taken.action)
            self._answer(inbound, texts.render("approvals_revoked", line=_permission_line(taken)))
            return
        if not permissions:
            self._answer(inbound, texts.load("approvals_none"))
            return
        lines = "\n".join(
            f"{number}. {_permission_line(permission)}"
            for number, permission in enumerate(permissions, start=1)
        )
        self._answer(inbound, texts.render("approvals_list", lines=lines))

    def _invite(self, inbound: InboundMessage, invites: Invites) -> str:
        """/invite: the owner's, in their private chat (core/invites.py decides)."""
        private = inbound.chat_type == "private"
        return invites.command(
            " ".join(inbound.text.split()[1:]),
            sender_id=inbound.sender_id,
            owner=self._owner,
            private=private,
            bot_username=lambda: self._channel.get_me().username,
        )

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

    def _console(self, inbound: InboundMessage) -> None:
        """/console: a button that opens the console (Telegram opens a Mini App from a private
        chat's button only, and from an https address only: elsewhere the address itself). The
        console signs the person in by Telegram's launch data, so the button is no secret."""
        url = self._console_url
        if not url:
            self._answer(inbound, texts.load("console_off"))
        elif inbound.chat_type != "private":
            self._answer(inbound, texts.load("console_private_only"))
        elif not url.startswith("https://"):
            self._answer(inbound, texts.render("console_local", url=url))
        else:
            try:
                self._channel.send_web_app(
                    inbound.chat_id, texts.load("console_open"), texts.load("console_button"), url
                )
            except ChannelError as error:
                if not error.blocked:
                    raise

    def _hooks_command(self, inbound: InboundMessage) -> None:
        """/hooks: the owner's, answered once per update through the journal (see the module's
        docstring); from a group, the secret goes to the owner's private chat only."""
        journal_key, turn_id = _hooks_record(inbound)
        progress = self._journal.get(journal_key, turn_id)
        if progress.done:
            logger.info("/hooks answered by an earlier run: skipped", extra={"turn": turn_id})
            return
        reply = self._hooks.answer(
            " ".join(inbound.text.split()[1:]),
            chat_id=inbound.chat_id,
            thread_id=inbound.thread_id,
            sender_id=inbound.sender_id,
            is_owner=self._owner is not None and inbound.sender_id == self._owner,
            private=inbound.chat_type == "private",
            update=turn_id,
        )
        outbox = JournaledOutbox(self._channel, self._journal, journal_key, progress)
        # The journal keeps a note in place of the message showing the secret.
        note = None
        if reply.secret_of is not None:
            note = texts.render("hooks_secret_recorded", name=reply.secret_of)
        here, here_note = reply.here, note
        if reply.to_owner is not None and self._owner is not None:
            here_note = None
            if not self._secret_to_owner(outbox, self._owner, reply.to_owner, note):
                here = texts.load("hooks_secret_not_sent")
        outbox.send(inbound.chat_id, here, inbound.thread_id, recorded_as=here_note)
        self._journal.mark_done(journal_key, progress)

    def hooks_given_up(self, inbound: InboundMessage) -> str | None:
        """What to tell the chat of a `/hooks` update that failed for the last time (it goes to
        the dead-letter queue), when it made a hook whose secret no run recorded as sent: that
        hook is removed, and the notice says to add it again. Without this the owner would
        hold a hook nobody can sign for, and `/hooks add` of its name would be refused as
        taken. None otherwise: the usual notice applies. (Telegram may have taken the secret
        in a run that died before recording it: the notice then tells the owner it is gone.)"""
        journal_key, turn_id = _hooks_record(inbound)
        hook = self._hooks.made_in(turn_id)
        if hook is None:
            return None
        progress = self._journal.get(journal_key, turn_id)
        note = texts.render("hooks_secret_recorded", name=hook.name)
        if any(shown.text == note for shown in progress.sent.values()):
            return None  # the owner has it: the hook stays
        self._hooks.withdraw(hook)
        logger.warning("a hook whose secret was never sent is removed", extra={"hook": hook.name})
        return texts.render("hooks_not_made", name=hook.name)

    @staticmethod
    def _secret_to_owner(outbox: JournaledOutbox, owner: int, text: str, note: str | None) -> bool:
        """Send a group's hook's secret to the owner's private chat; False when that chat
        refuses it (no private chat with the bot yet, or it blocked the bot). Any other failure
        is raised: the update is run again and sends it then."""
        try:
            return outbox.send(owner, text, recorded_as=note)
        except ChannelError as error:
            if not error.refused:
                raise
            logger.warning("could not send a hook's secret to the owner: %s", error.kind)
            return False

    def _welcome(self, user_id: int) -> None:
        try:
            send_unjournaled(self._channel, user_id, texts.load("pairing_welcome"))
        except ChannelError as error:  # e.g. they blocked the bot meanwhile: still approved
            logger.warning("could not welcome an approved person: %s", error)

    def _answer(self, inbound: InboundMessage, text: str) -> None:
        send_unjournaled(self._channel, inbound.chat_id, text, inbound.thread_id)


def _permission_line(permission: Permission) -> str:
    """A standing permission in words: its action, where, since when."""
    where = "your own chat" if not permission.scope else permission.scope
    return texts.render(
        "approvals_line",
        action=texts.literal(permission.action),
        where=texts.literal(where),
        since=texts.literal(permission.granted_at[:16].replace("T", " ")),
    )


def _hooks_record(inbound: InboundMessage) -> tuple[str, str]:
    """Where a `/hooks` message's answer is journaled: its journal key and its update's turn
    id (messages.py)."""
    return f"hooks-command:{inbound.chat_id}", f"update-{inbound.update_id}"
