"""The context of one job: what its turn, and every tool the model calls in it, is given.

agent_turn makes it once per job, from the queue record parsed once (functions/agent_turn/
dispatch.py), and passes it explicitly down the turn and to each tool call (`Tool.run(ctx,
**arguments)`, core/tools.py), as pydantic-ai passes its `RunContext` and openai-agents its
`RunContextWrapper`. It holds whose the job is (its subject), the workspace of its scope, the
tools its chat is offered, the model its chat chose, the meter its usage is counted and limited
by, and, once the turn's run exists, the run's outbox.

It is immutable: what becomes known as the turn goes is a new context (`with_model` once the
session says the chat's /model and /think, `with_run` once the run exists, `for_call` for each
tool call). The services agent_turn builds once per container hold clients and caches only:
whatever is one job's is here, so no job can see another's.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass, field, replace
from typing import Literal

from nanobot_lambda.adapters.telegram.inbound import InboundMessage
from nanobot_lambda.adapters.telegram.models import Update
from nanobot_lambda.adapters.telegram.places import Ignored
from nanobot_lambda.core.errors import ToolError
from nanobot_lambda.core.jobs import ApprovalJob, StartJob
from nanobot_lambda.core.model_choice import ModelChoice
from nanobot_lambda.core.ports import Outbox, Workspace
from nanobot_lambda.core.subjects import Subject
from nanobot_lambda.core.tools import ToolRegistry
from nanobot_lambda.core.usage import JobMeter

# Who started the turn. Only a person's own message ("user") may create scheduled jobs; a hook
# event ("hook") carries a payload from outside and is no more trusted than a schedule.
TurnOrigin = Literal["user", "cron", "heartbeat", "subagent", "announcement", "hook"]


@dataclass
class AnswerNotes:
    """What the chat tools leave for the turn's answer, as one run of it goes (`with_run` makes
    them anew)."""

    sent: list[tuple[int, str]] = field(default_factory=list)  # the message tool's (chat, text)
    reply_buttons: tuple[str, ...] = ()  # under the final answer (the reply_buttons tool)


@dataclass(frozen=True, kw_only=True)
class JobContext:
    """One job's context (see the module's docstring)."""

    job: StartJob  # the job whose turn runs (a continuation's: the job it continues)
    subject: Subject  # whose it is: its chat and topic, its person, its scope
    origin: TurnOrigin  # who started it (its kind's)
    workspace: Workspace  # the subject's scope's (core/scopes.py)
    tools: ToolRegistry[JobContext]  # the container's, and the remote ones its chat may use
    meter: JobMeter  # its usage, counted and limited for its chat (core/usage.py)
    # Its chat's /model and /think, once its session is read (`with_model`).
    model: ModelChoice = field(default_factory=ModelChoice)
    continued: bool = False  # a continuation of the turn in another invocation
    quiet: bool = False  # shows no progress while it works (a quiet task)
    # A Telegram update's: the update, validated once, and the message it asks to answer (or
    # why there is none).
    update: Update | None = None
    inbound: InboundMessage | Ignored | None = None
    # Once the turn's run exists: its messages (each sent once, functions/agent_turn/outbox.py),
    # the turn's stable id (core/journal.py), and what its tools leave for the answer.
    outbox: Outbox | None = None
    turn_id: str = ""
    notes: AnswerNotes = field(default_factory=AnswerNotes)
    # A turn resumed once a call it waited on was decided: the decision (core/approvals.py).
    approval: ApprovalJob | None = None
    call_id: str = ""  # in a tool call: its id, the same in every run of the turn

    @property
    def chat_id(self) -> int:
        return self.subject.chat_id

    @property
    def thread_id(self) -> int | None:
        return self.subject.thread_id

    def with_model(self, choice: ModelChoice) -> JobContext:
        """The job answered by its chat's choice of model."""
        return replace(self, model=choice)

    def with_run(self, turn_id: str, outbox: Outbox) -> JobContext:
        """The context of one run of the job's turn."""
        return replace(self, turn_id=turn_id, outbox=outbox, notes=AnswerNotes())

    def for_call(self, call_id: str) -> JobContext:
        """The context of one tool call (core/tools.py)."""
        return replace(self, call_id=call_id)

    def run_outbox(self) -> Outbox:
        """The run's outbox, for a tool that sends to the chat."""
        if self.outbox is None:
            raise ToolError("this tool can only be used during a conversation turn")
        return self.outbox

    def call_key(self) -> str:
        """A short id for what the running tool call makes: the same when a later run of the
        turn runs the same call again (core/tools.py), so it is not made twice."""
        if not (self.turn_id and self.call_id):
            return secrets.token_hex(4)
        return hashlib.sha256(f"{self.turn_id}/{self.call_id}".encode()).hexdigest()[:8]
