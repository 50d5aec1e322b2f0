"""Update parsing and classification over every real-shaped fixture."""

from __future__ import annotations

import pytest

from nanobot_lambda.adapters.telegram.inbound import (
    Accepted,
    Reacted,
    Rejected,
    classify,
    to_inbound,
)
from nanobot_lambda.adapters.telegram.models import Update
from nanobot_lambda.adapters.telegram.places import Ignored
from nanobot_lambda.core.allowlist import AllowList
from tests.conftest import all_telegram_fixture_names, telegram_update

OWNER = AllowList.parse("111111111")

# What the bot does with each fixture when the owner (111111111) is allowed.
EXPECTED = {
    "callback_query": Accepted,  # a button pressed: the user's choice
    "channel_post": Ignored,
    "command_new_with_botname": Accepted,
    "command_start": Accepted,
    "document_pdf": Accepted,
    # a short turn: what the message says now (core/reactions_and_edits.py)
    "edited_message": Accepted,
    "forum_topic_message": Accepted,
    "forwarded": Accepted,
    "group_mention": Accepted,
    "group_no_mention": Accepted,
    "location": Accepted,
    "message_reaction": Reacted,  # recorded by the webhook, no turn
    "my_chat_member_blocked": Ignored,
    "photo_with_caption": Accepted,
    "reply_to_bot": Accepted,
    "sticker": Accepted,
    "text_private": Accepted,
    "unicode_text": Accepted,
    "user_without_username": Rejected,  # another user, allowed only by id (see below)
    "voice": Accepted,
}


def test_every_fixture_is_covered() -> None:
    assert sorted(EXPECTED) == all_telegram_fixture_names()


@pytest.mark.parametrize("name", all_telegram_fixture_names())
def test_every_fixture_parses(name: str) -> None:
    raw = telegram_update(name)
    update = Update.model_validate(raw)
    assert update.update_id == raw["update_id"]
    assert update.kind in raw


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_classification(name: str) -> None:
    decision = classify(Update.model_validate(telegram_update(name)), OWNER)
    assert isinstance(decision, EXPECTED[name])


def test_user_without_username_matches_by_id_only() -> None:
    raw = telegram_update("user_without_username")
    sender_id = raw["message"]["from"]["id"]
    assert "username" not in raw["message"]["from"]
    decision = classify(Update.model_validate(raw), AllowList.parse(str(sender_id)))
    assert isinstance(decision, Accepted)
    assert decision.message.sender_username is None


def test_rejected_carries_the_numeric_sender_id() -> None:
    decision = classify(Update.model_validate(telegram_update("text_private")), AllowList())
    assert decision == Rejected(sender_id=111111111, chat_id=111111111)


def test_forum_topic_has_its_own_session() -> None:
    inbound = to_inbound(Update.model_validate(telegram_update("forum_topic_message")))
    assert not isinstance(inbound, Ignored)
    assert inbound.thread_id == 600
    assert inbound.session_key == "telegram:-1009876543210:600"


def test_private_chat_session_key() -> None:
    inbound = to_inbound(Update.model_validate(telegram_update("text_private")))
    assert not isinstance(inbound, Ignored)
    assert inbound.session_key == "telegram:111111111"
    assert inbound.text == "Hi! What can you do?"


def test_non_text_messages_are_described() -> None:
    photo = to_inbound(Update.model_validate(telegram_update("photo_with_caption")))
    location = to_inbound(Update.model_validate(telegram_update("location")))
    document = to_inbound(Update.model_validate(telegram_update("document_pdf")))
    assert not isinstance(photo, Ignored)
    assert photo.text == "[photo]\nWhat is in this picture?"
    assert not isinstance(location, Ignored)
    assert location.text.startswith("[location: ")
    assert not isinstance(document, Ignored)
    assert "application/pdf" in document.text


def test_messages_from_bots_are_ignored() -> None:
    raw = telegram_update("text_private")
    raw["message"]["from"]["is_bot"] = True
    decision = classify(Update.model_validate(raw), AllowList.parse("*"))
    assert decision == Ignored("message from a bot")


def test_unknown_fields_are_tolerated() -> None:
    raw = telegram_update("text_private")
    raw["message"]["brand_new_field"] = {"x": 1}
    raw["another_new_update_kind"] = {}
    assert Update.model_validate(raw).message is not None


@pytest.mark.parametrize("body", [{}, {"update_id": "x"}, [], "text", {"message": {}}])
def test_non_updates_are_invalid(body: object) -> None:
    with pytest.raises(ValueError):
        Update.model_validate(body)


# -- the allow-list rules, applied by classify -----------------------------------------------------

STRANGER = {"id": 333333333, "is_bot": False, "first_name": "Cy"}
LISTED = AllowList.parse("111111111,-1002000000000")


def from_stranger(name: str, kind: str = "message") -> Update:
    raw = telegram_update(name)
    payload = raw[kind]
    payload["from"] = STRANGER
    # A message's chat; a button's, that of the message it is under.
    holder = payload["message"] if kind == "callback_query" else payload
    if "chat" in holder and holder["chat"]["type"] == "private":
        holder["chat"] = {"id": STRANGER["id"], "type": "private"}
    return Update.model_validate(raw)


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("command_start", "message"),  # commands are checked like messages
        ("text_private", "message"),
        ("edited_message", "edited_message"),
        ("callback_query", "callback_query"),
        ("photo_with_caption", "message"),
    ],
)
def test_strangers_are_refused_whatever_they_send(name: str, kind: str) -> None:
    decision = classify(from_stranger(name, kind), LISTED)
    assert isinstance(decision, Rejected) and decision.sender_id == 333333333


def test_the_owners_edits_are_heard_as_edits() -> None:
    decision = classify(Update.model_validate(telegram_update("edited_message")), LISTED)
    assert isinstance(decision, Accepted) and decision.message.edited


def test_a_button_press_is_the_users_choice_in_words_under_the_message_it_was_on() -> None:
    update = telegram_update("callback_query")
    update["callback_query"]["message"]["reply_markup"] = {
        "inline_keyboard": [[{"text": "Green tea", "callback_data": "opt:1"}]]
    }
    decision = classify(Update.model_validate(update), LISTED)
    assert isinstance(decision, Accepted)
    pressed = decision.message
    assert pressed.text == '[pressed the button "Green tea" under your message: "Pick one"]'
    assert (pressed.chat_id, pressed.message_id) == (111111111, 19)
    assert pressed.callback_query_id == "4382bfdwdsb323b2d9" and pressed.command is None


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"message": None}, "too old"),
        ({"from": {"id": 5, "is_bot": True, "first_name": "Bot"}}, "by a bot"),
        ({"data": None}, "without data"),
    ],
)
def test_a_press_that_cannot_be_a_choice_is_ignored(change: dict[str, object], reason: str) -> None:
    update = telegram_update("callback_query")
    update["callback_query"].update(change)
    inbound = to_inbound(Update.model_validate(update))
    assert isinstance(inbound, Ignored) and reason in inbound.reason


def test_in_a_group_the_sender_must_be_listed_unless_the_group_is() -> None:
    unlisted = from_stranger("group_no_mention")  # in -1001234567890
    assert isinstance(classify(unlisted, LISTED), Rejected)
    raw = telegram_update("group_no_mention")
    raw["message"]["from"] = STRANGER
    raw["message"]["chat"]["id"] = -1002000000000
    accepted = classify(Update.model_validate(raw), LISTED)
    assert isinstance(accepted, Accepted)
    assert accepted.message.sender_id == 333333333
    # The owner is allowed in any group.
    owner = classify(Update.model_validate(telegram_update("group_mention")), LISTED)
    assert isinstance(owner, Accepted)


def test_bots_are_ignored_even_in_a_listed_group() -> None:
    raw = telegram_update("group_no_mention")
    raw["message"]["from"] = {"id": 5, "is_bot": True, "first_name": "B", "username": "b_bot"}
    raw["message"]["chat"]["id"] = -1002000000000
    assert classify(Update.model_validate(raw), LISTED) == Ignored("message from a bot")


def on_behalf_of(chat: dict[str, object], group_id: int) -> Update:
    raw = telegram_update("group_no_mention")
    raw["message"]["from"] = {"id": 1087968824, "is_bot": True, "first_name": "Group"}
    raw["message"]["sender_chat"] = chat
    raw["message"]["chat"]["id"] = group_id
    return Update.model_validate(raw)


def test_messages_sent_on_behalf_of_a_chat_are_judged_by_that_chat() -> None:
    listed_group = {"id": -1002000000000, "type": "supergroup", "title": "G"}
    channel = {"id": -1005555555555, "type": "channel", "title": "News", "username": "news_ch"}
    # An anonymous admin of a listed group: the group itself speaks.
    admin = classify(on_behalf_of(listed_group, -1002000000000), LISTED)
    assert isinstance(admin, Accepted) and admin.message.sender_id == -1002000000000
    # A linked channel in an unlisted group: refused, by the channel's id...
    assert classify(on_behalf_of(channel, -1001234567890), LISTED) == Rejected(
        sender_id=-1005555555555, chat_id=-1001234567890
    )
    # ...allowed when the channel (by id or username) or the group is listed.
    assert isinstance(
        classify(on_behalf_of(channel, -1001234567890), AllowList.parse("@news_ch")), Accepted
    )
    assert isinstance(classify(on_behalf_of(channel, -1002000000000), LISTED), Accepted)


def test_channel_posts_are_ignored_even_from_a_listed_channel() -> None:
    update = Update.model_validate(telegram_update("channel_post"))
    assert classify(update, AllowList.parse("-1005555555555")) == Ignored("channel post")
    assert classify(update, AllowList()) == Ignored("channel post")
