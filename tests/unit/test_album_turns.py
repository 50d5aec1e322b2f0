"""Albums through agent_turn's turns: the parts the webhook recorded become one turn with every
photo and the caption; the other parts' jobs are skipped; a part too late for the album, or a
retry of the album's turn, answers nothing twice. In a group, the album is the bot's when any
part is addressed to it.

Turns run on in-memory fakes (see test_turns.py); the album's clock (`MemoryAlbumBook.now_ms`)
stands at 0, so every album is quiet already and nobody waits."""

from __future__ import annotations

from typing import Any

import pytest

from nanobot_lambda.core import texts
from nanobot_lambda.core.albums import album_key
from nanobot_lambda.core.errors import ChannelError, ModelError
from nanobot_lambda.core.jobs import TelegramUpdateJob
from tests.conftest import album_updates, telegram_update
from tests.support.fakes import ScriptedModel, text
from tests.unit.test_turns import Bot

JPEG = b"\xff\xd8\xff\xe0\x00\x10JFIF\x00" + bytes(range(256)) * 4
KEY = album_key("telegram:111111111", "13571113579")


def bot(*replies: Any) -> Bot:
    photos = Bot(ScriptedModel(*replies))
    for index in range(5):
        photos.channel.files[f"AgACAgQAAxkBAAIBPhotoLarge{index}"] = JPEG
    return photos


def received(photos: Bot, updates: list[dict[str, Any]]) -> list[TelegramUpdateJob]:
    """What the webhook does with each part: record it with its album, queue its job."""
    for update in updates:
        photos.albums.add_part(KEY, update["update_id"], update)
    return [TelegramUpdateJob(update=update) for update in updates]


def images_sent(photos: Bot, request: int = 0) -> int:
    messages, _ = photos.model.requests[request]
    content = messages[-1]["content"]
    return sum(1 for part in content if part.get("type") == "image_url")


def test_an_album_is_one_turn_with_every_photo_and_the_caption() -> None:
    photos = bot(text("Three photos of the same cat."))
    for job in received(photos, album_updates(3)):
        photos.process(job)

    assert photos.said == ["Three photos of the same cat."]  # one answer, not three
    assert len(photos.model.requests) == 1
    assert images_sent(photos) == 3
    messages, _ = photos.model.requests[0]
    assert "What is in this picture?" in messages[-1]["content"][-1]["text"]
    (user, _) = photos.saved()
    assert user["update_id"] == 800000100  # the album's turn is its first part's
    assert user["content"].count("[image] (saved at uploads/") == 3 and user["content"].endswith(
        "What is in this picture?"
    )
    stored = [path for path in photos.workspace.files if path.startswith("uploads/")]
    assert len(stored) == 3


def test_a_part_that_arrives_after_the_album_was_answered_gets_its_own_turn() -> None:
    photos = bot(text("Two photos."), text("And a third one."))
    first, second, late = album_updates(3)
    for job in received(photos, [first, second]):
        photos.process(job)
    (job,) = received(photos, [late])
    photos.process(job)

    assert photos.said == ["Two photos.", "And a third one."]
    assert [images_sent(photos, request) for request in (0, 1)] == [2, 1]


def test_a_retried_album_turn_answers_the_same_parts_once() -> None:
    photos = bot(text("Two photos."), text("Two photos."))
    photos.channel.fail_on = "Two photos."  # Telegram fails the answer: SQS retries the job
    jobs = received(photos, album_updates(2))
    with pytest.raises(ChannelError):
        photos.process(jobs[0])
    photos.process(jobs[0])  # SQS's retry
    photos.process(jobs[1])

    assert photos.said == ["Two photos."]
    assert images_sent(photos, 1) == 2
    assert len(photos.albums.claims) == 1


def test_an_album_whose_turn_ended_with_the_apology_is_not_answered_by_a_redelivery() -> None:
    photos = bot(ModelError("model unavailable"), text("never asked for"))
    jobs = received(photos, album_updates(2))
    photos.process(jobs[0])  # the model fails: an apology, nothing saved
    for job in [jobs[0], *jobs]:  # delivered again (a crash, a lost ack): nothing more
        photos.process(job)

    assert photos.said == [texts.load("model_error")]
    assert len(photos.model.requests) == 1
    assert photos.saved() == []


def test_a_repeated_delivery_of_an_answered_album_is_skipped() -> None:
    photos = bot(text("Two photos."))
    jobs = received(photos, album_updates(2))
    for job in [*jobs, *jobs]:
        photos.process(job)
    assert photos.said == ["Two photos."] and len(photos.model.requests) == 1


def test_in_a_group_an_album_is_answered_when_its_caption_mentions_the_bot() -> None:
    photos = bot(text("A cat, three times."))
    group = telegram_update("group_mention")["message"]
    updates = album_updates(3)
    for update in updates:
        update["message"]["chat"] = group["chat"]
        update["message"]["from"] = group["from"]
    # The caption with the mention is on the last part, not on the one that leads.
    updates[-1]["message"]["caption"] = group["text"]
    updates[-1]["message"]["caption_entities"] = group["entities"]
    del updates[0]["message"]["caption"]
    photos.settings["ALLOW_FROM"] = f"{group['from']['id']},{group['chat']['id']}"
    key = album_key(f"telegram:{group['chat']['id']}", "13571113579")
    for update in updates:
        photos.albums.add_part(key, update["update_id"], update)
    photos.__post_init__()  # the settings above
    for update in updates:
        photos.process(TelegramUpdateJob(update=update))

    assert photos.said == ["A cat, three times."]
    assert images_sent(photos) == 3
