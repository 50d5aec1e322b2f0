"""Telling people what stopped the model, through the turn's outbox like any message:
- a spending limit (core/spend.py): the chat once per limit and period, and the owner once per
  limit and period (for a chat's own limit, once per chat);
- a setup problem (core/model_setup.py: a refused key, a model that does not exist…): the owner
  what to fix, once per problem and day (every time in their own chat: they asked), and the
  chat that the owner knows, instead of "try again in a moment".

Each "once" is `UsageStore.first_notice`, which says yes again to the same turn, so a turn run
again after a crash sends its notice to the same place in its outbox (and the outbox skips it
if Telegram has it)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime

from nanobot_lambda.core.errors import ModelError, StorageError
from nanobot_lambda.core.model_setup import ModelSetupProblem
from nanobot_lambda.core.ports import UsageStore
from nanobot_lambda.core.spend import LimitReached
from nanobot_lambda.functions.agent_turn.turn_run import TurnRun
from nanobot_lambda.tools.context import JobContext

logger = logging.getLogger(__name__)


class SpendNotices:
    def __init__(self, usage: UsageStore, owner: int | None, clock: Callable[[], datetime]) -> None:
        self._usage = usage
        self._owner = owner
        self._clock = clock

    def tell(self, ctx: JobContext, run: TurnRun, reached: LimitReached) -> bool:
        """Whether the turn's chat is to be told now (the turn's reply is the notice); tells
        the owner, in their private chat, when that is another chat."""
        turn = run.progress.turn_id
        owner = self._owner
        if owner is not None and owner != ctx.chat_id:
            whose = f"#{reached.chat_id}" if reached.who == "chat" else ""
            if self._first(owner, f"owner#{reached.notice_key}{whose}", turn):
                run.outbox.send(owner, reached.owner_notice())
        told = self._first(ctx.chat_id, reached.notice_key, turn)
        if not told:
            logger.info("spending limit: the chat was told before", extra={"chat_id": ctx.chat_id})
        return told

    def _first(self, chat_id: int, key: str, turn: str) -> bool:
        return first_notice(self._usage, self._clock, chat_id, key, turn)


class SetupNotices:
    def __init__(self, usage: UsageStore, owner: int | None, clock: Callable[[], datetime]) -> None:
        self._usage = usage
        self._owner = owner
        self._clock = clock

    def tell(self, ctx: JobContext, run: TurnRun, error: ModelError) -> str | None:
        """For a setup problem: tell the owner what to fix (when due), and return the name of
        the text the turn's chat ends with; None when `error` may pass (the usual apology)."""
        problem = ModelSetupProblem.of(error)
        if problem is None:
            return None
        owner, turn = self._owner, run.progress.turn_id
        key = problem.notice_key(self._clock())
        if owner is not None and (
            owner == ctx.chat_id or first_notice(self._usage, self._clock, owner, key, turn)
        ):
            run.outbox.send(owner, problem.owner_notice())
        return problem.chat_text(ctx.chat_id, owner)


def first_notice(
    usage: UsageStore, clock: Callable[[], datetime], chat_id: int, key: str, turn: str
) -> bool:
    try:
        return usage.first_notice(chat_id, key, turn, clock())
    except StorageError as error:
        # Telling twice beats never telling.
        logger.warning("could not record a notice: %s", error)
        return True
