"""Every kind of job agent_turn runs, each declared once, in `KINDS`.

A `JobKind` says all that differs between kinds outside their turn: whose a job is (its subject,
core/subjects.py), the turn that runs it (turn.py's `JobTurn`), which tools it is offered,
whether a person waits for it (told once when it is given up for good), whether it runs only
while its chat may still talk to the bot, and the ids that name it, never its text (on its log
records while it runs, by default its chat and its envelope's `ids`, which the dead-letter
listing names it by too: adapters/aws/dead_letters.py). The dispatcher (which makes each job's
context from it), its `give_up` and log correlation all read it from here.

Two jobs go on with a turn another job started, and are that job's kind here: a continuation
(the turn ran out of time) and an approval's resume (`ApprovalJob`: a call of the turn waited for a
person, functions/agent_turn/approvals.py). Each carries the job it goes on with, so its subject,
its turn and its ids are that job's (with the approval's id added, `job_ids`, and its decision in
the dead-letter listing, `describe`); the isolation table has their rows.

Adding a job kind: its envelope in core/jobs.py (what goes on the queue), its turn in a module of
its own (as scheduled.py's), and its `JobKind` here; then its rows in the isolation table
(tests/unit/test_isolation.py fails until it has them).
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from nanobot_lambda.adapters.telegram.places import Ignored
from nanobot_lambda.adapters.telegram.subjects import subject_of_update
from nanobot_lambda.core.jobs import (
    AnnouncementJob,
    CronTaskJob,
    HeartbeatJob,
    HookEventJob,
    StartJob,
    SubagentJob,
    TelegramUpdateJob,
)
from nanobot_lambda.core.subjects import NoSubject, Subject, person_of_chat, subject_in
from nanobot_lambda.functions.agent_turn.background import AnnouncementTurn, SubagentTurn
from nanobot_lambda.functions.agent_turn.events import HookEventTurn
from nanobot_lambda.functions.agent_turn.messages import MessageTurn
from nanobot_lambda.functions.agent_turn.queued import QueuedJob
from nanobot_lambda.functions.agent_turn.scheduled import CronTaskTurn, HeartbeatTurn
from nanobot_lambda.functions.agent_turn.turn import JobTurn
from nanobot_lambda.functions.agent_turn.turn_deps import TurnDeps

J = TypeVar("J", bound=StartJob)

Ids = dict[str, object]


def in_its_chat(queued: QueuedJob, owner: int | None) -> Subject:
    """The subject of a job that carries its chat (and topic): a scheduled task's, a background
    task's and its announcement's, and a hook event's are the chat that made them; the
    heartbeat's is the owner's private chat. In a private chat its person is the chat's."""
    job = queued.started
    chat_id: int = getattr(job, "chat_id")  # noqa: B009 - every kind declared so carries one
    thread_id: int | None = getattr(job, "thread_id", None)
    return subject_in(chat_id, thread_id=thread_id, person_id=person_of_chat(chat_id), owner=owner)


def of_its_update(queued: QueuedJob, owner: int | None) -> Subject:
    """A queued update's: where the webhook judged it (adapters/telegram/subjects.py)."""
    return subject_of_update(queued.update, owner)


def carried(queued: QueuedJob) -> Ids:
    """The ids of a job that carries its chat: the chat, then those its envelope names (`ids`,
    core/jobs.py: the dead-letter listing names it by the same)."""
    job = queued.started
    chat_id: int = getattr(job, "chat_id")  # noqa: B009 - every kind declared so carries one
    return {"chat_id": chat_id, **{name: getattr(job, name) for name in job.ids}}


def update_ids(queued: QueuedJob) -> Ids:
    """A queued update's id, and its subject's chat if it has one."""
    job = queued.started
    assert isinstance(job, TelegramUpdateJob)
    ids: Ids = {
        "update_id": queued.update.update_id if queued.update else job.update.get("update_id")
    }
    # One with no chat is refused when it runs (sqs_records.py): its other ids still name it.
    with suppress(NoSubject):
        ids["chat_id"] = of_its_update(queued, None).chat_id
    return ids


def has_message(queued: QueuedJob) -> bool:
    """An update waits for an answer when it holds a message the bot answers."""
    return queued.inbound is not None and not isinstance(queued.inbound, Ignored)


def always(queued: QueuedJob) -> bool:
    return True


def never(queued: QueuedJob) -> bool:
    return False


@dataclass(frozen=True, kw_only=True)
class JobKind(Generic[J]):
    """One kind of job, as agent_turn runs it."""

    envelope: type[J]  # what is queued (core/jobs.py); its `kind` is this kind's name
    turn: Callable[[TurnDeps, J], JobTurn[J]]  # the turn that runs a job of this kind
    subject: Callable[[QueuedJob, int | None], Subject] = in_its_chat  # (the job, OWNER_ID)
    ids: Callable[[QueuedJob], Ids] = carried  # what names a job, never its text
    # The chat tools too (cron, message, spawn…: toolbox.py); else the workspace tools only.
    chat_tools: bool = True
    # A person waits for its answer: when it fails for good, its chat is told once.
    told_when_given_up: Callable[[QueuedJob], bool] = never
    # Nobody sent it just now (a schedule, a background task, an event): it runs only while
    # its chat may still talk to the bot.
    unsent: bool = False

    @property
    def name(self) -> str:
        return str(self.envelope.model_fields["kind"].default)


def _kinds(*kinds: JobKind[Any]) -> dict[str, JobKind[Any]]:
    return {kind.name: kind for kind in kinds}


KINDS = _kinds(
    JobKind(
        envelope=TelegramUpdateJob,
        turn=MessageTurn,
        subject=of_its_update,
        ids=update_ids,
        told_when_given_up=has_message,
    ),
    JobKind(envelope=HeartbeatJob, turn=HeartbeatTurn),
    JobKind(
        envelope=CronTaskJob,
        turn=CronTaskTurn,
        told_when_given_up=always,
        unsent=True,
    ),
    JobKind(
        envelope=SubagentJob,
        turn=SubagentTurn,
        chat_tools=False,  # a background task has no chat to act in, and starts no other
        told_when_given_up=always,
        unsent=True,
    ),
    JobKind(envelope=AnnouncementJob, turn=AnnouncementTurn, unsent=True),
    JobKind(envelope=HookEventJob, turn=HookEventTurn, unsent=True),
)


def kind_of(queued: QueuedJob) -> JobKind[Any]:
    """The kind of the job whose turn runs (a continuation: of the job it continues)."""
    return KINDS[queued.started.kind]


def subject_of(queued: QueuedJob, owner: int | None) -> Subject:
    """Whom the job is for and where it answers; `owner` is OWNER_ID (None: no owner known,
    every chat shares the owner's workspace). Raises NoSubject for a job with no such place."""
    return kind_of(queued).subject(queued, owner)


def job_ids(queued: QueuedJob) -> Ids:
    """What names the job (ids only, never text): its kind, and its kind's ids (an approval's
    resume: the approval's id too)."""
    ids = {"job_kind": queued.job.kind, **kind_of(queued).ids(queued)}
    if queued.approval is not None:
        ids["approval_id"] = queued.approval.approval_id
    return ids
