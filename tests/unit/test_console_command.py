"""/console: a button that opens the console (a Mini App), in a private chat only, where
Telegram shows one, and from an https address only."""

from __future__ import annotations

import copy

from nanobot_lambda.core.bot_commands import command_menu
from tests.support.fakes import ScriptedModel
from tests.unit.test_turns import ADA, Bot, message

CONSOLE = "https://api-x.execute-api.us-east-1.amazonaws.com/console"


def in_a_group(words: str, update_id: int) -> object:
    job = message(words, update_id)
    update = copy.deepcopy(job.update)
    update["message"]["chat"] = {"id": -1001234567890, "type": "supergroup", "title": "Team"}
    return type(job)(update=update)


def test_console_answers_with_a_button_that_opens_the_mini_app() -> None:
    chat = Bot(ScriptedModel(), settings={"CONSOLE_URL": CONSOLE})
    chat.process(message("/console", 1))
    ((number, (label, url)),) = chat.channel.web_apps.items()
    assert (label, url) == ("Open the console", CONSOLE)
    assert chat.channel.sent[number - 1][0] == ADA
    assert "Your console" in chat.said[-1]


def test_console_elsewhere_says_where_it_opens() -> None:
    allow = f"{ADA},-1001234567890"
    chat = Bot(ScriptedModel(), settings={"CONSOLE_URL": CONSOLE, "ALLOW_FROM": allow})
    chat.process(in_a_group("/console", 1))
    assert chat.channel.web_apps == {}
    assert "private chat" in chat.said[-1]

    local = Bot(ScriptedModel(), settings={"CONSOLE_URL": "http://127.0.0.1:8123/console"})
    local.process(message("/console", 2))
    assert local.channel.web_apps == {}  # Telegram opens https Mini Apps only
    assert "http://127.0.0.1:8123/console" in local.said[-1]

    none = Bot(ScriptedModel())
    none.process(message("/console", 3))
    assert "not deployed" in none.said[-1]


def test_console_is_in_the_command_menu() -> None:
    assert "console" in [entry["command"] for entry in command_menu()]
