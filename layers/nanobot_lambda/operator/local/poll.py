"""Real Telegram for the local stack: `getUpdates` long polling, each update posted to the local
webhook function the way Telegram posts it (same body, same secret token header).

An update is acknowledged (the next `getUpdates` passes its offset) only after the webhook
accepted it: when the webhook answers 5xx (the queue was unavailable) the update stays with
Telegram and comes back on the next call, as Telegram retries a failing webhook. A 4xx is a
refusal that no retry can change: it is reported and acknowledged, as Telegram gives up on it.

When the webhook's answer asks for a Bot API call (its sign of life, "typing…" or a reaction),
the poller makes it, as Telegram does with a webhook's answer: once, before the update is
acknowledged; a failure is logged (never with the token) and changes nothing else.

A webhook set for the bot makes `getUpdates` fail with 409. The poller stops there and says how
to remove it; it never deletes a deployed bot's webhook by itself.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from nanobot_lambda.adapters.telegram.client import TelegramBot, TelegramError
from nanobot_lambda.adapters.telegram.models import Update
from nanobot_lambda.operator.local.webhook_reply import reply_method
from nanobot_lambda.operator.ops.deployment import OperatorError
from nanobot_lambda.operator.ops.webhook_admin import ALLOWED_UPDATES

logger = logging.getLogger(__name__)

LONG_POLL_SECONDS = 25
RETRY_SECONDS = 3.0

Deliver = Callable[[Mapping[str, Any]], Mapping[str, Any]]
"""Posts one update to the webhook; returns its HTTP response (statusCode, body)."""


class WebhookIsSet(OperatorError):
    def __init__(self) -> None:
        super().__init__(
            "a webhook is set for this bot, so Telegram delivers its updates there and refuses "
            "getUpdates (409): remove it with `nanobot-lambda webhook delete` (and set it "
            "again with `nanobot-lambda webhook set --stack NAME` when you go back to the "
            "deployed bot)"
        )


@dataclass(frozen=True)
class Delivery:
    """What became of one update: the webhook's status and answer. Never the message text."""

    update_id: int
    kind: str
    chat_id: int | None
    status: int
    outcome: str  # the webhook's "status" (queued, ignored, refused) or its error

    @property
    def accepted(self) -> bool:
        return self.status < 500

    def describe(self) -> str:
        chat = f", chat {self.chat_id}" if self.chat_id is not None else ""
        return f"update {self.update_id} ({self.kind}{chat}): {self.outcome}"


def _summary(update: Mapping[str, Any]) -> tuple[int, str, int | None]:
    update_id = int(update.get("update_id", -1))
    try:
        parsed = Update.model_validate(update)
    except ValueError:
        return update_id, "unreadable", None
    message = parsed.message or parsed.edited_message or parsed.channel_post
    return update_id, parsed.kind, message.chat.id if message else None


class TelegramPoller:
    def __init__(
        self,
        bot: TelegramBot,
        deliver: Deliver,
        *,
        long_poll_seconds: int = LONG_POLL_SECONDS,
        retry_seconds: float = RETRY_SECONDS,
        on_delivery: Callable[[Delivery], None] = lambda delivery: None,
        on_problem: Callable[[str], None] = lambda problem: None,
    ) -> None:
        self._bot = bot
        self._deliver = deliver
        self._long_poll_seconds = long_poll_seconds
        self._retry_seconds = retry_seconds
        self._on_delivery = on_delivery
        self._on_problem = on_problem
        self.offset: int | None = None  # the next update wanted: all before it were accepted

    def poll_once(self) -> bool:
        """One getUpdates call and the delivery of what it returned; False if a delivery failed
        (the rest of the batch waits: it comes back, in order, with the next call)."""
        try:
            updates = self._bot.call(
                "getUpdates",
                offset=self.offset,
                timeout=self._long_poll_seconds,
                allowed_updates=list(ALLOWED_UPDATES),
            )
        except TelegramError as error:
            if error.status == 409 and "webhook" in error.description.lower():
                raise WebhookIsSet() from None
            if error.status == 409:
                raise OperatorError(
                    "another program is polling this bot (409 Conflict): stop it, only one "
                    "getUpdates client may run at a time"
                ) from None
            if error.status in (401, 404):
                raise OperatorError(
                    f"Telegram refused the bot token ({error.status}): check TELEGRAM_BOT_TOKEN "
                    "(the token @BotFather gave you)"
                ) from None
            raise
        for update in updates or []:
            delivery = self._deliver_one(update)
            self._on_delivery(delivery)
            if not delivery.accepted:
                return False
            self.offset = delivery.update_id + 1
        return True

    def _deliver_one(self, update: Mapping[str, Any]) -> Delivery:
        update_id, kind, chat_id = _summary(update)
        try:
            response = self._deliver(update)
        except Exception as error:
            return Delivery(update_id, kind, chat_id, 500, f"webhook failed ({error})")
        self._perform_reply_method(response)
        status = int(response.get("statusCode", 500))
        try:
            body = json.loads(response.get("body") or "{}")
        except ValueError:
            body = {}
        outcome = str(body.get("status") or body.get("error") or f"HTTP {status}")
        if status >= 500:
            outcome += "; kept with Telegram, retrying"
        elif status >= 400:
            outcome = f"refused by the webhook ({status}: {outcome}); skipped"
        return Delivery(update_id, kind, chat_id, status, outcome)

    def _perform_reply_method(self, response: Mapping[str, Any]) -> None:
        """The Bot API call the webhook's answer asks for, made as Telegram would: one attempt,
        its outcome only logged (TelegramError descriptions never hold the token)."""
        requested = reply_method(response)
        if requested is None:
            return
        method, params = requested
        try:
            self._bot.call(method, attempts=1, **params)
        except TelegramError as error:
            logger.warning("the webhook answer's %s failed (%s)", method, error)
        else:
            logger.debug("made the webhook answer's %s", method)

    def run(self, stop: threading.Event) -> None:
        """Poll until `stop` is set (checked between long polls), then confirm what was taken."""
        try:
            while not stop.is_set():
                try:
                    delivered = self.poll_once()
                except OperatorError:
                    raise
                except TelegramError as error:
                    self._on_problem(f"{error}; retrying in {self._retry_seconds:g} s")
                    delivered = False
                if not delivered:
                    stop.wait(self._retry_seconds)
        finally:
            self.confirm()

    def confirm(self) -> None:
        """Tell Telegram the accepted updates are done (getUpdates with the offset, no wait), so
        the next run does not receive them again. Best effort: stopping must not fail."""
        if self.offset is None:
            return
        try:
            self._bot.call("getUpdates", attempts=1, offset=self.offset, timeout=0, limit=1)
        except TelegramError as error:
            self._on_problem(f"could not confirm the last updates ({error.status})")
