"""Inline buttons through the whole stack: the model puts choices under its answer, the user
presses one, Telegram's loading spinner is answered by the webhook's reply, and the choice
reaches the model as the user's next message; the keyboard is taken off, so a second press of
it (a double tap, or a press delivered again) is not heard twice."""

from __future__ import annotations

import json

from nanobot_lambda.operator.local.stack import LocalStack
from tests.support.scripted_model import ScriptedModelServer


def say(stack: LocalStack, text: str, update_id: int) -> None:
    update = stack.text_update(text)
    update["update_id"] = update_id
    assert stack.post_update(update)["statusCode"] == 200
    stack.process_queue()


def ask_with_buttons(stack: LocalStack, model_server: ScriptedModelServer) -> None:
    model_server.call_tool("reply_buttons", {"buttons": ["Green tea", "Black tea"]})
    model_server.reply("Which tea would you like?")
    say(stack, "make me a tea", 720000001)


def test_a_pressed_button_is_the_users_choice_and_its_keyboard_goes(
    stack: LocalStack, model_server: ScriptedModelServer
) -> None:
    ask_with_buttons(stack, model_server)
    question = stack.bot_api.messages[-1]
    assert question.plain_text == "Which tea would you like?"
    assert [text for row in question.keyboard for text, _ in row] == ["Green tea", "Black tea"]

    model_server.reply("Green tea it is, brewing at 80 °C.")
    press = stack.press_button(question, "Green tea")
    response = stack.post_update(press)
    assert json.loads(response["body"])["status"] == "queued"
    assert stack.bot_api.answered_callbacks == [press["callback_query"]["id"]]  # no spinner
    stack.process_queue()

    choice = model_server.requests[-1]["messages"][-1]["content"]
    assert choice.endswith(
        '[pressed the button "Green tea" under your message: "Which tea would you like?"]'
    )
    assert stack.bot_api.messages[-1].plain_text == "Green tea it is, brewing at 80 °C."
    assert stack.bot_api.messages[-2].keyboard == ()  # taken off: no second choice from it


def test_two_presses_of_one_keyboard_are_heard_once(
    stack: LocalStack, model_server: ScriptedModelServer
) -> None:
    ask_with_buttons(stack, model_server)
    question = stack.bot_api.messages[-1]
    first = stack.press_button(question, "Black tea")
    second = stack.press_button(question, "Green tea")  # a double tap, before the first is done
    model_server.reply("Black tea, then.")
    for press in (first, second):
        assert stack.post_update(press)["statusCode"] == 200
    stack.process_queue()

    assert [m.plain_text for m in stack.bot_api.messages][-1] == "Black tea, then."
    assert model_server.remaining == 0 and not model_server.unexpected  # one model call
    assert stack.post_update(first)["statusCode"] == 200  # Telegram delivers it again
    stack.process_queue()
    assert not model_server.unexpected
