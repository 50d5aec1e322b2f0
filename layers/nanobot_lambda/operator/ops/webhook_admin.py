"""The Telegram side of a deployment: the webhook registration and what Telegram says of it,
and the bot's command menu."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from nanobot_lambda.adapters.telegram.client import TelegramBot
from nanobot_lambda.core.bot_commands import command_menu
from nanobot_lambda.operator.ops.deployment import OperatorError

# The update kinds the bot acts on: `telegram.inbound` reads `message` and `callback_query` (a
# button pressed), `edited_message` (an edit: a short turn, core/reactions_and_edits.py) and
# `message_reaction` (recorded by the webhook, no turn). Telegram sends reactions only when they
# are asked for here. Asking for nothing else spares the webhook every other kind.
# tests/unit/test_cli_contracts.py keeps the two in step, and tests/unit/test_isolation.py wants
# a row for each kind (its chat, person and scope: `telegram.places.place_of`,
# `telegram.subjects`).
ALLOWED_UPDATES = ("message", "edited_message", "callback_query", "message_reaction")
# A delivery error Telegram reported more recently than this is a failing webhook.
RECENT_ERROR = timedelta(hours=1)


@dataclass(frozen=True)
class WebhookInfo:
    url: str
    pending_update_count: int
    last_error_at: datetime | None
    last_error_message: str | None
    allowed_updates: tuple[str, ...] | None

    @classmethod
    def from_api(cls, result: Mapping[str, Any]) -> WebhookInfo:
        error_date = result.get("last_error_date")
        allowed = result.get("allowed_updates")
        return cls(
            url=str(result.get("url") or ""),
            pending_update_count=int(result.get("pending_update_count") or 0),
            last_error_at=datetime.fromtimestamp(int(error_date), UTC) if error_date else None,
            last_error_message=result.get("last_error_message"),
            allowed_updates=tuple(allowed) if allowed is not None else None,
        )

    def recent_error(self, now: datetime | None = None) -> bool:
        if self.last_error_at is None:
            return False
        return (now or datetime.now(UTC)) - self.last_error_at < RECENT_ERROR


def webhook_info(bot: TelegramBot) -> WebhookInfo:
    return WebhookInfo.from_api(bot.call("getWebhookInfo"))


def set_webhook(
    bot: TelegramBot, url: str, secret_token: str, *, drop_pending_updates: bool = False
) -> None:
    if not url.startswith("https://"):
        raise OperatorError(f"Telegram only calls HTTPS webhooks, not {url!r}: give an https URL")
    bot.call(
        "setWebhook",
        url=url,
        secret_token=secret_token,
        allowed_updates=list(ALLOWED_UPDATES),
        drop_pending_updates=drop_pending_updates or None,
    )


def set_command_menu(bot: TelegramBot) -> None:
    """The menu Telegram shows when the user types "/": the commands /help lists."""
    bot.call("setMyCommands", commands=command_menu())


MENU_BUTTON_TEXT = "Console"


def set_menu_button(bot: TelegramBot, console_url: str | None) -> None:
    """The button beside the message box of every private chat with the bot: the console (a
    Mini App) where the stack has one, Telegram's command list otherwise."""
    button: dict[str, Any] = (
        {"type": "web_app", "text": MENU_BUTTON_TEXT, "web_app": {"url": console_url}}
        if console_url
        else {"type": "commands"}
    )
    bot.call("setChatMenuButton", menu_button=button)


def menu_button_opens(bot: TelegramBot) -> str | None:
    """The URL the private chats' menu button opens (None: it opens no Mini App)."""
    button = bot.call("getChatMenuButton") or {}
    if button.get("type") != "web_app":
        return None
    url = button.get("web_app", {}).get("url")
    return str(url) if url else None


def command_menu_is_current(bot: TelegramBot) -> bool:
    return list(bot.call("getMyCommands") or []) == command_menu()


def delete_webhook(bot: TelegramBot, *, drop_pending_updates: bool = False) -> None:
    bot.call("deleteWebhook", drop_pending_updates=drop_pending_updates or None)
