"""Inline buttons in turns: under the final answer (reply_buttons) or a message (message tool);
a press is a turn with the user's choice, its keyboard taken off once; a second press of the
same keyboard is not heard, and a retried press turn is not mistaken for one.

Turns run on in-memory fakes (see test_turns.py)."""

from __future__ import annotations

import json

import pytest

from nanobot_lambda.core.errors import ChannelError
from nanobot_lambda.core.jobs import TelegramUpdateJob
from tests.conftest import telegram_update
from tests.support.fakes import ScriptedModel, text, tool
from tests.unit.test_turns import Bot, message


def press(message_id: int, label: str, update_id: int) -> TelegramUpdateJob:
    update = telegram_update("callback_query")
    update["update_id"] = update_id
    query = update["callback_query"]
    query["id"] = f"query-{update_id}"
    query["message"]["message_id"] = message_id
    query["message"]["text"] = "Which tea?"
    query["message"]["reply_markup"] = {
        "inline_keyboard": [[{"text": label, "callback_data": "b0"}]]
    }
    query["data"] = "b0"
    return TelegramUpdateJob(update=update)


def asked() -> Bot:
    buttons = tool("reply_buttons", json.dumps({"buttons": ["Green tea", " Black  tea "]}))
    bot = Bot(ScriptedModel(buttons, text("Which tea?"), text("Green it is."), text("Again.")))
    bot.process(message("make me a tea"))
    return bot


def test_the_final_answer_carries_the_buttons_the_model_asked_for() -> None:
    bot = asked()
    assert bot.said == ["Which tea?"]
    assert bot.channel.keyboards == {1: ("Green tea", "Black tea")}  # one line each


def test_the_message_tool_sends_buttons_too() -> None:
    send = tool("message", json.dumps({"content": "Ready?", "buttons": ["Yes", "No"]}))
    bot = Bot(ScriptedModel(send, text("Done.")))
    bot.process(message("ask me"))
    assert bot.said == ["Ready?", "Done."] and bot.channel.keyboards == {1: ("Yes", "No")}


def test_a_press_is_a_turn_with_the_choice_and_takes_the_keyboard_off() -> None:
    bot = asked()
    bot.process(press(1, "Green tea", 800000101))

    assert bot.said == ["Which tea?", "Green it is."]
    assert bot.channel.buttons_removed == [(111111111, 1)] and bot.channel.keyboards == {}
    choice = bot.saved()[-2]["content"]
    assert choice == '[pressed the button "Green tea" under your message: "Which tea?"]'


def test_a_second_press_of_the_same_keyboard_is_not_heard() -> None:
    bot = asked()
    bot.process(press(1, "Green tea", 800000101))
    bot.process(press(1, "Black tea", 800000102))  # pressed before the keyboard went

    assert bot.said == ["Which tea?", "Green it is."]
    assert len(bot.model.requests) == 3  # the second press asked nothing


def test_a_retried_press_turn_goes_on_after_its_keyboard_was_taken_off() -> None:
    bot = asked()
    bot.channel.fail_on = "Green it is."
    with pytest.raises(ChannelError):
        bot.process(press(1, "Green tea", 800000101))
    bot.process(press(1, "Green tea", 800000101))  # SQS's retry of the same press

    # Not taken for a second press: the retry answers (anew: the first answer never went out).
    assert bot.said == ["Which tea?", "Again."]
    assert bot.channel.buttons_removed == [(111111111, 1)]  # once, recorded in the journal
