"""The context of one job: what its turn, and every tool the model calls in it, is given.

agent_turn makes it once per job, from the queue record parsed once (functions/agent_turn/
dispatch.py), and passes it explicitly down the turn and to each tool call, as pydantic-ai
passes its `RunContext` and openai-agents its `RunContextWrapper`.
"""

from __future__ import annotations

from dataclasses import dataclass

from nanobot_lambda.adapters.telegram.inbound import InboundMessage
from nanobot_lambda.adapters.telegram.models import Update
from nanobot_lambda.adapters.telegram.places import Ignored
from nanobot_lambda.core.jobs import StartJob
from nanobot_lambda.core.subjects import Subject


@dataclass(frozen=True, kw_only=True)
class JobContext:
    """One job's context. Immutable."""

    job: StartJob  # the job whose turn runs (a continuation's: the job it continues)
    subject: Subject  # whose it is: its chat and topic, its person, its scope
    continued: bool = False  # a continuation of the turn in another invocation
    # A Telegram update's: the update, validated once, and the message it asks to answer (or
    # why there is none).
    update: Update | None = None
    inbound: InboundMessage | Ignored | None = None
