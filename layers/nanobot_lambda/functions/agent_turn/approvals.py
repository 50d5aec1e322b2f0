"""A turn's approvals: the gate every tool call passes before it runs, the question when one
waits for a person, and the decision when the press (or the deadline) resumes the turn.

The policy (core/approvals.py) rules on each call in the agent loop's gate (`gate`), with the
job's context: its chat, its scope, its origin. A call that asks is recorded in the turn's
journal (`TurnProgress.pending`: the call, a random approval id, the approver, the deadline)
with the step; the runner then asks (`ask`): the approval is recorded where the webhook and the
scheduler can check a press or the deadline against it, a one-time schedule is set at the
deadline, and the approver is sent the question through the run's outbox (once, however often
the turn runs), with three buttons. The invocation then ends: nothing waits.

The press's webhook queues an `ApprovalJob` in the turn's queue group; its turn resumes from the
journal, and the gate finds the waiting call: the decision is recorded in the journal before the
call runs (so it runs at most once, and a press that comes again finds it decided), a standing
permission is recorded for "Always allow here", and the question is edited to say who decided
and when. A denial, a deadline passed or a conversation that went on gives the model the reason
as the call's result. A resume for another approval than the one the turn waits on does nothing.

A new message in the conversation while a call waits: the waiting turn is finished first, its
call denied as "the person moved on" (the model is told, the question edited), then the new
message is answered (`AnotherTurnWaits`, turn.py and dispatch.py).
"""

from __future__ import annotations

import json
import logging
import secrets
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from nanobot_lambda.adapters.telegram.places import session_key_for
from nanobot_lambda.core import texts
from nanobot_lambda.core.agent import Gate, Held, tool_calls_of
from nanobot_lambda.core.approvals import (
    UNTRUSTED_RESULTS,
    Approval,
    ApprovalBook,
    ApprovalDeadlines,
    Call,
    Decision,
    Pending,
    Permission,
    TurnFacts,
    callback_data,
    hosts_named,
    target_of,
)
from nanobot_lambda.core.journal import TurnProgress
from nanobot_lambda.core.model import ToolCall
from nanobot_lambda.core.ports import TurnJournal
from nanobot_lambda.functions.agent_turn.turn_run import TurnRun
from nanobot_lambda.settings import ApprovalSettings
from nanobot_lambda.tools.context import JobContext

logger = logging.getLogger(__name__)

ARGUMENTS_SHOWN_CHARS = 600  # of a call's arguments, in the question
ALLOWED: tuple[Decision, ...] = ("once", "always")
DENIALS: dict[Decision, str] = {
    "deny": "approval_denied",
    "timeout": "approval_timed_out",
    "moved_on": "approval_moved_on",
}


class Approvals:
    """The approvals of every job's turn: made once per container; what is one turn's is in
    its journal record and its run."""

    def __init__(
        self,
        settings: ApprovalSettings,
        book: ApprovalBook,
        deadlines: ApprovalDeadlines,
        journal: TurnJournal,
        owner: int | None,
        clock: Callable[[], datetime],
    ) -> None:
        self._policy = settings.approval_policy
        self._book = book
        self._deadlines = deadlines
        self._journal = journal
        self._owner = owner
        self._timeout = timedelta(minutes=settings.approval_timeout_minutes)
        self._clock = clock

    def gate(self, run: TurnRun, request: Sequence[dict[str, Any]]) -> Gate:
        """The agent loop's gate for one run of a turn whose first request is `request`: the
        hosts its conversation names (the people's own words) are part of it already."""
        known = hosts_named(
            str(message.get("content") or "")
            for message in request
            if message.get("role") == "user" and isinstance(message.get("content"), str)
        )

        def rule(ctx: JobContext, call: ToolCall, messages: list[dict[str, Any]]) -> Held | None:
            return self._rule(ctx, run, known, call, messages)

        return rule

    def waits(self, ctx: JobContext, run: TurnRun) -> bool:
        """Whether this run of the turn only waits for a decision it was not given: a resume
        for another approval than the one the turn waits on (pressed twice, or late) does
        nothing."""
        pending, answer = run.progress.pending, ctx.approval
        if answer is None:
            return False
        if pending is None or pending.approval_id != answer.approval_id:
            logger.info("approval not waited on (decided, or unknown): nothing to do")
            return True
        return False

    def _rule(
        self,
        ctx: JobContext,
        run: TurnRun,
        known_hosts: frozenset[str],
        call: ToolCall,
        messages: list[dict[str, Any]],
    ) -> Held | None:
        progress = run.progress
        pending = progress.pending
        if pending is not None and pending.call_id == call.id:
            if pending.decision is None:
                decision = self._answer(ctx, pending)
                if decision is None:
                    return Held()  # still waiting
                pending = self._decide(run, pending, decision)
            if ctx.approval is not None and ctx.approval.approval_id == pending.approval_id:
                self._tell(ctx, run, call, pending)  # again if a run died before it did
            if pending.decision in ALLOWED:
                return None
            assert pending.decision is not None
            minutes = int(self._timeout.total_seconds() // 60)
            return Held(texts.render(DENIALS[pending.decision], minutes=minutes))
        if pending is not None and pending.decision is None:
            return Held()  # one question at a time: this call waits its turn
        asked = ctx.tools.approval_call(call)
        if asked is None:
            return None  # the registry answers it with an error
        facts = TurnFacts(
            ctx.chat_id, self._owner, self._untrusted(ctx, progress, messages), known_hosts
        )
        scope = ctx.subject.scope.name
        ruling = self._policy.rule(asked, facts, lambda action: self._book.allowed(scope, action))
        if ruling.policy == "allow":
            return None
        if ruling.policy == "deny":
            logger.info("tool call denied by the approval rules", extra={"tool": call.name})
            return Held(texts.render("approval_refused_by_policy", tool=call.name))
        if ruling.approver is None:
            return Held(texts.render("approval_nobody", tool=call.name))
        deadline = self._clock() + self._timeout
        progress.pending = Pending(
            call_id=call.id,
            approval_id=secrets.token_urlsafe(12),
            approver=ruling.approver,
            deadline=deadline.astimezone(UTC).isoformat(timespec="seconds"),
            action=asked.action,
            scope=scope,
            reason=ruling.reason,
        )
        logger.info("tool call waits for an approval", extra={"tool": call.name})
        return Held()

    def _untrusted(
        self, ctx: JobContext, progress: TurnProgress, messages: list[dict[str, Any]]
    ) -> bool:
        """Whether content from outside entered the turn (a hook's payload, a document, a
        fetched page or search, an MCP result); once it did, the journal keeps it so."""
        if progress.untrusted:
            return True
        message = ctx.update.message if ctx.update is not None else None
        progress.untrusted = (
            ctx.origin == "hook"
            or (message is not None and message.document is not None)
            or any(_from_outside(ctx, m) for m in messages if m.get("role") == "tool")
        )
        return progress.untrusted

    def _answer(self, ctx: JobContext, pending: Pending) -> ApprovalAnswer | None:
        """The decision this run was given for the waiting call, if any: the approver's press
        within the deadline (a press after it counts as the deadline's), the deadline, or the
        conversation going on."""
        answer = ctx.approval
        if answer is None or answer.approval_id != pending.approval_id:
            return None
        if answer.decision in ("timeout", "moved_on"):
            return ApprovalAnswer(answer.decision, None, "", answer.decided_at)
        if answer.decided_by != pending.approver:
            logger.warning("approval decided by someone else: ignored")
            return None
        if datetime.fromisoformat(answer.decided_at) > datetime.fromisoformat(pending.deadline):
            return ApprovalAnswer("timeout", None, "", pending.deadline)
        return ApprovalAnswer(
            answer.decision, answer.decided_by, answer.decided_by_name, answer.decided_at
        )

    def _decide(self, run: TurnRun, pending: Pending, answer: ApprovalAnswer) -> Pending:
        """Record the decision before the call runs (at most once), and the standing
        permission it gives."""
        decided = replace(
            pending,
            decision=answer.decision,
            decided_by=answer.decided_by,
            decided_by_name=answer.name,
            decided_at=answer.decided_at,
        )
        run.progress.pending = decided
        with run.outbox.lock:
            self._journal.checkpoint(run.journal_key, run.progress)
        logger.info("approval decided", extra={"decision": answer.decision})
        if answer.decision == "always" and answer.decided_by is not None:
            self._book.allow_always(
                Permission(decided.scope, decided.action, answer.decided_by, answer.decided_at)
            )
        return decided

    def _tell(self, ctx: JobContext, run: TurnRun, call: ToolCall, pending: Pending) -> None:
        """Edit the question to say who decided and when (through the outbox: once)."""
        assert pending.decision is not None and pending.decided_at is not None
        approval = self._book.get(pending.approval_id)
        if approval is None or approval.message_id is None:
            return  # its message id was never noted (the run died right after sending it)
        person = pending.decided_by_name or str(pending.decided_by)
        outcome = texts.render(f"approval_outcome_{pending.decision}", person=texts.literal(person))
        at = datetime.fromisoformat(pending.decided_at).astimezone(UTC)
        text = texts.render(
            "approval_decided",
            request=self._question(ctx, call, pending),
            outcome=outcome,
            time=at.strftime("%Y-%m-%d %H:%M UTC"),
        )
        run.outbox.edit(approval.approver, approval.message_id, text)

    def ask(self, ctx: JobContext, run: TurnRun) -> None:
        """The turn waits for a person: record the approval (for the press and the deadline to
        be checked against), set its deadline's schedule, send the approver the question (and
        the turn's chat, if that is another, a note that it waits), then record the messages
        sent. Each step is the same when a later run of the turn does it again."""
        pending = run.progress.pending
        assert pending is not None and pending.decision is None, "nothing waits"
        call = _waiting_call(run.progress, pending.call_id)
        deadline = datetime.fromisoformat(pending.deadline)
        self._book.put(
            Approval(
                approval_id=pending.approval_id,
                session_key=run.group,
                turn_id=run.progress.turn_id,
                chat_id=ctx.chat_id,
                approver=pending.approver,
                deadline=int(deadline.timestamp()),
                job=run.job.model_dump_json(),
            )
        )
        self._deadlines.set(pending.approval_id, deadline)
        outbox = run.outbox
        before = len(outbox.sent_ids)
        buttons = [
            (texts.load(f"approval_button_{name}"), callback_data(pending.approval_id, letter))
            for name, letter in (("once", "o"), ("always", "a"), ("deny", "d"))
        ]
        outbox.send(pending.approver, self._question(ctx, call, pending), buttons=buttons)
        if len(outbox.sent_ids) > before:  # sent now, not by an earlier run
            self._book.note_message(pending.approval_id, outbox.sent_ids[-1][1])
        if pending.approver != ctx.chat_id:
            approver = "the owner" if pending.approver == self._owner else str(pending.approver)
            note = texts.render(
                "approval_waiting", approver=approver, tool=texts.literal(call.name)
            )
            outbox.send(ctx.chat_id, note, ctx.thread_id)
        with outbox.lock:
            run.progress.sends = outbox.count  # a resumed run numbers its messages after these
            self._journal.checkpoint(run.journal_key, run.progress)
        logger.info("approval asked", extra={"approval_id": pending.approval_id})

    def _question(self, ctx: JobContext, call: ToolCall, pending: Pending) -> str:
        """What would happen, as text (every part the model chose shown literally: no markup,
        no link)."""
        asked = ctx.tools.approval_call(call) or Call(call.name, {})
        arguments = json.dumps(asked.arguments, ensure_ascii=False)
        why = f"approval_why_{pending.reason}" if pending.reason else "approval_why_asked"
        server = f" (MCP server {texts.literal(asked.server)})" if asked.server else ""
        here = session_key_for(ctx.chat_id, ctx.thread_id)
        where = "this chat" if pending.approver == ctx.chat_id else f"chat {texts.literal(here)}"
        return texts.render(
            "approval_request",
            why=texts.load(why),
            tool=texts.literal(asked.remote_tool or call.name),
            server=server,
            target=texts.literal(target_of(asked) or "-"),
            arguments=texts.literal(arguments, limit=ARGUMENTS_SHOWN_CHARS),
            where=where,
            minutes=int(self._timeout.total_seconds() // 60),
        )


class AnotherTurnWaits(Exception):
    """A person's new message found an earlier turn of their conversation waiting for an
    approval: that turn is finished first, its call denied ("the person moved on"), then the
    message is answered (dispatch.py)."""

    def __init__(self, approval_id: str) -> None:
        super().__init__("another turn of the conversation waits for an approval")
        self.approval_id = approval_id


def waiting_turn(open_turns: Mapping[str, TurnProgress], own_turn_id: str) -> str | None:
    """The approval another turn of the conversation waits on, if one does."""
    for turn_id, progress in open_turns.items():
        pending = progress.pending
        if turn_id != own_turn_id and pending is not None and pending.decision is None:
            return pending.approval_id
    return None


class ApprovalAnswer:
    """A decision as the gate takes it."""

    def __init__(self, decision: Decision, by: int | None, name: str, at: str) -> None:
        self.decision: Decision = decision
        self.decided_by = by
        self.name = name
        self.decided_at = at


def _from_outside(ctx: JobContext, message: dict[str, Any]) -> bool:
    """A tool result whose content comes from outside: the web's, or an MCP server's."""
    name = str(message.get("name") or "")
    if name in UNTRUSTED_RESULTS:
        return True
    asked = ctx.tools.approval_call(ToolCall("", name, "{}"))
    return asked is not None and asked.server is not None


def _waiting_call(progress: TurnProgress, call_id: str) -> ToolCall:
    for message in reversed(progress.messages):
        for call in tool_calls_of(message):
            if call.id == call_id:
                return call
    raise ValueError("the waiting call is not among the turn's messages")
