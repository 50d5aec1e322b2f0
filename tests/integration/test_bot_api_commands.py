"""The command menu: the local Bot API's `setMyCommands` / `getMyCommands` over HTTP, answering
as Telegram does, and the menu `webhook set` registers, the list /help shows."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pydantic import SecretStr

from nanobot_lambda.adapters.telegram.client import TelegramBot, TelegramError
from nanobot_lambda.core.bot_commands import BOT_COMMANDS, command_menu, help_text
from nanobot_lambda.operator.local.bot_api import LocalBotApi
from nanobot_lambda.operator.ops.webhook_admin import command_menu_is_current, set_command_menu

TOKEN = "8282:commands-token"


@pytest.fixture
def api() -> Iterator[LocalBotApi]:
    server = LocalBotApi(TOKEN).start()
    yield server
    server.stop()


@pytest.fixture
def bot(api: LocalBotApi) -> TelegramBot:
    return TelegramBot(SecretStr(TOKEN), api.base_url, max_attempts=1)


def test_the_menu_is_the_list_help_shows_and_telegram_accepts_it(bot: TelegramBot) -> None:
    assert not command_menu_is_current(bot)  # a new bot has no menu
    set_command_menu(bot)
    assert bot.call("getMyCommands") == command_menu()
    assert command_menu_is_current(bot)
    for command, description in BOT_COMMANDS:
        assert f"/{command}: {description}" in help_text()


@pytest.mark.parametrize(
    ("commands", "error"),
    [
        ([{"command": "Usage", "description": "capital letters"}], "BOT_COMMAND_INVALID"),
        ([{"command": "/usage", "description": "a slash"}], "BOT_COMMAND_INVALID"),
        ([{"command": "x" * 33, "description": "too long"}], "BOT_COMMAND_INVALID"),
        ([{"command": "usage", "description": ""}], "BOT_COMMAND_DESCRIPTION_INVALID"),
        ([{"command": "usage", "description": "d" * 257}], "BOT_COMMAND_DESCRIPTION_INVALID"),
        ([{"command": f"c{n}", "description": "d"} for n in range(101)], "BOT_COMMANDS_TOO_MUCH"),
    ],
)
def test_a_menu_telegram_refuses_is_refused_and_the_old_one_stays(
    api: LocalBotApi, bot: TelegramBot, commands: list[dict[str, str]], error: str
) -> None:
    set_command_menu(bot)
    with pytest.raises(TelegramError, match=error):
        bot.call("setMyCommands", commands=commands)
    assert api.commands == command_menu()
