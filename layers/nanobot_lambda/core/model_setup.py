"""A model that cannot answer as it is set up (`ModelError.permanent`): who is told what.

A refused key, a model name without a provider, a model that does not exist or may not be used:
no retry and no later message helps, so "send it again in a moment" would be wrong advice. The
chat is told that the assistant is not set up right and that the owner knows; the owner is told
what is wrong and where to fix it, in their private chat, once per problem and day (for their
own chat's turns, every time: they asked). The turn ends unanswered like any failed turn; its
chat text is a template name, as the journal records it for a later run of the turn.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime

from nanobot_lambda.core import texts
from nanobot_lambda.core.errors import ModelError

CHAT_TEXT = "model_setup_error"  # a chat other than the owner's: "the owner has been told"
OWNER_CHAT_TEXT = "model_setup_error_owner"  # the owner's own chat: "I sent you the fix"
OWNER_NOTICE = "model_setup_owner"
PROBLEM_MAX_CHARS = 600  # a few sentences; the adapter's are shorter


@dataclass(frozen=True)
class ModelSetupProblem:
    problem: str  # what is wrong and what to fix (the adapter's words: no secret, no user text)

    @classmethod
    def of(cls, error: ModelError) -> ModelSetupProblem | None:
        """The setup problem behind `error`; None for a failure that may pass."""
        return cls(error.setup_problem) if error.setup_problem is not None else None

    def chat_text(self, chat_id: int, owner: int | None) -> str:
        """The name of the text the turn's chat ends with."""
        return OWNER_CHAT_TEXT if chat_id == owner else CHAT_TEXT

    def notice_key(self, at: datetime) -> str:
        """One owner notice per problem and (UTC) day: a key for `UsageStore.first_notice`."""
        digest = hashlib.sha256(self.problem.encode()).hexdigest()[:16]
        return f"model-setup#{at.strftime('%Y-%m-%d')}#{digest}"

    def owner_notice(self) -> str:
        """What the owner is told: the problem, and where settings are changed."""
        return texts.render(OWNER_NOTICE, problem=texts.literal(self.problem, PROBLEM_MAX_CHARS))
