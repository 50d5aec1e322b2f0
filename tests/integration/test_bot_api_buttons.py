"""The local Bot API's inline keyboards, over HTTP, answering as Telegram does: buttons sent
with `sendMessage`, a user pressing one (`press`), `answerCallbackQuery` and
`editMessageReplyMarkup`."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import requests
from pydantic import SecretStr

from nanobot_lambda.adapters.telegram.client import TelegramBot, TelegramError
from nanobot_lambda.operator.local.bot_api import BOT_USER, LocalBotApi, SentMessage

TOKEN = "8282:button-token"
CHAT = 42
YES_NO = {
    "inline_keyboard": [
        [{"text": "Yes", "callback_data": "answer:yes"}, {"text": "No", "callback_data": "no"}],
        [{"text": "Later", "callback_data": "later"}],
    ]
}
QUERY_INVALID = "Bad Request: query is too old and response timeout expired or query ID is invalid"


@pytest.fixture
def api() -> Iterator[LocalBotApi]:
    server = LocalBotApi(TOKEN).start()
    yield server
    server.stop()


@pytest.fixture
def bot(api: LocalBotApi) -> TelegramBot:
    return TelegramBot(SecretStr(TOKEN), api.base_url, max_attempts=1)


def send(bot: TelegramBot, markup: Any = YES_NO, chat_id: int = CHAT) -> Any:
    return bot.call("sendMessage", chat_id=chat_id, text="Shall I?", reply_markup=markup)


def refused(call: Any) -> tuple[int | None, str]:
    with pytest.raises(TelegramError) as raised:
        call()
    return raised.value.status, raised.value.description


def test_the_keyboard_is_stored_and_returned(api: LocalBotApi, bot: TelegramBot) -> None:
    result = send(bot)
    assert result["reply_markup"] == YES_NO
    (message,) = api.messages
    assert message.keyboard == (
        (("Yes", "answer:yes"), ("No", "no")),
        (("Later", "later"),),
    )
    assert message.message_id == result["message_id"]
    assert "reply_markup" not in bot.call("sendMessage", chat_id=CHAT, text="plain")
    assert api.messages[1].keyboard == ()


def test_a_keyboard_in_a_form_is_json(api: LocalBotApi) -> None:
    response = requests.post(
        f"{api.base_url}/bot{TOKEN}/sendMessage",
        data={"chat_id": CHAT, "text": "Shall I?", "reply_markup": json.dumps(YES_NO)},
        timeout=5,
    )
    assert response.json()["result"]["reply_markup"] == YES_NO
    assert api.messages[0].keyboard[1] == (("Later", "later"),)


@pytest.mark.parametrize(
    ("button", "description"),
    [
        ({"text": "", "callback_data": "x"}, "text buttons are unallowed in the inline keyboard"),
        ({"callback_data": "x"}, "text buttons are unallowed in the inline keyboard"),
        ({"text": "Go"}, "BUTTON_DATA_INVALID"),
        ({"text": "Go", "callback_data": ""}, "BUTTON_DATA_INVALID"),
        ({"text": "Go", "callback_data": "x" * 65}, "BUTTON_DATA_INVALID"),
        ({"text": "Go", "callback_data": "é" * 33}, "BUTTON_DATA_INVALID"),  # 66 bytes
    ],
)
def test_bad_buttons_are_refused(
    api: LocalBotApi, bot: TelegramBot, button: dict[str, str], description: str
) -> None:
    markup = {"inline_keyboard": [[button]]}
    assert refused(lambda: send(bot, markup)) == (400, f"Bad Request: {description}")
    assert api.messages == []


def test_callback_data_of_64_bytes_and_100_buttons_are_the_limits(
    api: LocalBotApi, bot: TelegramBot
) -> None:
    send(bot, {"inline_keyboard": [[{"text": "Go", "callback_data": "é" * 32}]]})
    row = [{"text": str(n), "callback_data": str(n)} for n in range(10)]
    send(bot, {"inline_keyboard": [row] * 10})
    status, _ = refused(lambda: send(bot, {"inline_keyboard": [row] * 10 + [row[:1]]}))
    assert status == 400
    assert len(api.messages) == 2


def test_press_builds_the_callback_update(api: LocalBotApi, bot: TelegramBot) -> None:
    sent = send(bot)
    message = api.messages[0]
    update = api.press(message, "No")
    query = update["callback_query"]
    assert query["data"] == "no"
    assert query["from"] == {"id": CHAT, "is_bot": False, "first_name": "Ada"}
    assert query["message"]["reply_markup"] == YES_NO
    assert query["message"]["message_id"] == sent["message_id"]
    assert query["message"]["from"] == BOT_USER
    assert query["message"]["chat"] == {"id": CHAT, "type": "private"}
    assert query["message"]["text"] == "Shall I?"
    assert isinstance(query["id"], str) and isinstance(query["chat_instance"], str)
    assert isinstance(query["message"]["date"], int)

    again = api.press(message, "Yes", user={"id": 5, "is_bot": False, "first_name": "Bo"})
    assert again["update_id"] > update["update_id"]
    assert again["callback_query"]["id"] != query["id"]
    assert again["callback_query"]["from"]["id"] == 5
    with pytest.raises(ValueError, match="Maybe"):
        api.press(message, "Maybe")


def test_a_group_message_is_in_a_supergroup(api: LocalBotApi, bot: TelegramBot) -> None:
    send(bot, chat_id=-1001234)
    update = api.press(api.messages[0], "Later", user={"id": 7, "is_bot": False, "first_name": "C"})
    assert update["callback_query"]["message"]["chat"] == {"id": -1001234, "type": "supergroup"}


def test_a_callback_query_is_answered_once(api: LocalBotApi, bot: TelegramBot) -> None:
    send(bot)
    query_id = api.press(api.messages[0], "Yes")["callback_query"]["id"]
    assert bot.call("answerCallbackQuery", callback_query_id=query_id, text="Done") is True
    assert api.answered_callbacks == [query_id]
    again = refused(lambda: bot.call("answerCallbackQuery", callback_query_id=query_id))
    assert again == (400, QUERY_INVALID)
    assert api.answered_callbacks == [query_id]


def test_an_unknown_callback_query_is_refused(api: LocalBotApi, bot: TelegramBot) -> None:
    unknown = refused(lambda: bot.call("answerCallbackQuery", callback_query_id="12345"))
    assert unknown == (400, QUERY_INVALID)
    assert api.answered_callbacks == []


def test_edit_reply_markup_removes_the_keyboard_then_is_not_modified(
    api: LocalBotApi, bot: TelegramBot
) -> None:
    first = send(bot)
    send(bot)  # a second message, to keep the order
    message_id = first["message_id"]
    result = bot.call("editMessageReplyMarkup", chat_id=CHAT, message_id=message_id)
    assert "reply_markup" not in result
    assert [m.keyboard == () for m in api.messages] == [True, False]
    assert api.messages[0].message_id == message_id
    assert api.keyboard_edits == [(CHAT, message_id, ())]
    with pytest.raises(ValueError):
        api.press(api.messages[0], "Yes")  # the keyboard is gone

    same = refused(
        lambda: bot.call(
            "editMessageReplyMarkup", chat_id=CHAT, message_id=message_id, reply_markup={}
        )
    )
    assert same == (
        400,
        "Bad Request: message is not modified: specified new message content and reply markup "
        "are exactly the same as a current content and reply markup of the message",
    )
    one = {"inline_keyboard": [[{"text": "Undo", "callback_data": "undo"}]]}
    result = bot.call(
        "editMessageReplyMarkup", chat_id=CHAT, message_id=message_id, reply_markup=one
    )
    assert result["reply_markup"] == one
    assert api.messages[0].keyboard == ((("Undo", "undo"),),)
    assert api.press(api.messages[0], "Undo")["callback_query"]["data"] == "undo"
    assert len(api.keyboard_edits) == 2


def test_editing_an_unknown_message_is_refused(api: LocalBotApi, bot: TelegramBot) -> None:
    send(bot)
    unknown = refused(
        lambda: bot.call(
            "editMessageReplyMarkup", chat_id=CHAT, message_id=999, reply_markup=YES_NO
        )
    )
    assert unknown == (400, "Bad Request: message to edit not found")
    assert api.keyboard_edits == []


def test_a_message_made_without_a_keyboard_still_builds() -> None:
    message = SentMessage(
        chat_id=1, message_id=1, text="t", plain_text="t", parse_mode=None, thread_id=None
    )
    assert message.keyboard == ()
