"""Update parsing and classification over every real-shaped fixture."""

from __future__ import annotations

import pytest

from nanobot_lambda.allowlist import AllowList
from nanobot_lambda.telegram.inbound import Accepted, Ignored, Rejected, classify, to_inbound
from nanobot_lambda.telegram.models import Update
from tests.conftest import all_telegram_fixture_names, telegram_update

OWNER = AllowList.parse("111111111")

# What the bot does with each fixture when the owner (111111111) is allowed.
EXPECTED = {
    "callback_query": Ignored,
    "channel_post": Ignored,
    "command_new_with_botname": Accepted,
    "command_start": Accepted,
    "document_pdf": Accepted,
    "edited_message": Ignored,
    "forum_topic_message": Accepted,
    "forwarded": Accepted,
    "group_mention": Accepted,
    "group_no_mention": Accepted,
    "location": Accepted,
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
