"""Telling people that a spending limit stopped the model (core/spend.py): the chat once per
limit and period, and the owner once per limit and period (for a chat's own limit, once per
chat), through the turn's outbox like any message."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime

from nanobot_lambda.core.errors import StorageError
from nanobot_lambda.core.ports import UsageStore
from nanobot_lambda.core.spend import LimitReached
from nanobot_lambda.entry.agent_turn.turn_run import TurnRun
from nanobot_lambda.tools.chat import TurnScope

logger = logging.getLogger(__name__)


class SpendNotices:
    def __init__(self, usage: UsageStore, owner: int | None, clock: Callable[[], datetime]) -> None:
        self._usage = usage
        self._owner = owner
        self._clock = clock

    def tell(self, run: TurnRun, scope: TurnScope, reached: LimitReached) -> bool:
        """Whether the turn's chat is to be told now (the turn's reply is the notice); tells
        the owner, in their private chat, when that is another chat."""
        turn = run.progress.turn_id
        owner = self._owner
        if owner is not None and owner != scope.chat_id:
            whose = f"#{reached.chat_id}" if reached.who == "chat" else ""
            if self._first(owner, f"owner#{reached.notice_key}{whose}", turn):
                run.outbox.send(owner, reached.owner_notice())
        told = self._first(scope.chat_id, reached.notice_key, turn)
        if not told:
            logger.info(
                "spending limit: the chat was told before", extra={"chat_id": scope.chat_id}
            )
        return told

    def _first(self, chat_id: int, key: str, turn: str) -> bool:
        try:
            return self._usage.first_notice(chat_id, key, turn, self._clock())
        except StorageError as error:
            # Telling twice beats never telling.
            logger.warning("could not record a spending notice: %s", error)
            return True
