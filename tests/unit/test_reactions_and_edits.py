"""Reactions and edits through the webhook (core/feedback.py), on in-memory stores: a reaction
is recorded and starts no turn; an edit is recorded and queued as a short turn; both follow
the allow-list like messages."""

from __future__ import annotations

import json
from typing import Any

import pytest

from nanobot_lambda.adapters.telegram.inbound import InboundMessage, to_inbound
from nanobot_lambda.adapters.telegram.models import Update
from nanobot_lambda.core.feedback import (
    Edit,
    Reaction,
    answered_unchanged,
    edit_turn_text,
    exchange_of,
    feedback_line,
)
from tests.conftest import telegram_update
from tests.support.fakes import MemoryFeedbackBook, MemoryQueue
from tests.unit.test_webhook import make_webhook, post


def reaction(emojis: list[str], *, date: int = 1763800060, **changes: Any) -> dict[str, Any]:
    update = telegram_update("message_reaction")
    reacted = update["message_reaction"]
    reacted["new_reaction"] = [{"type": "emoji", "emoji": emoji} for emoji in emojis]
    reacted["date"] = date
    reacted |= changes
    return update


def edited(text: str, *, edit_date: int = 1763800030, update_id: int = 800000008) -> Any:
    update = telegram_update("edited_message")
    update["update_id"] = update_id
    update["edited_message"] |= {"text": text, "edit_date": edit_date}
    return update


def answer_of(response: dict[str, Any]) -> dict[str, Any]:
    return {"code": response["statusCode"], **json.loads(response["body"])}


def test_a_reaction_is_recorded_and_queues_no_turn() -> None:
    queue, book = MemoryQueue(), MemoryFeedbackBook()
    webhook = make_webhook(queue, feedback=book)
    assert answer_of(post(webhook, reaction(["👍"]))) == {
        "code": 200,
        "ok": True,
        "status": "recorded",
    }
    assert queue.sent == []  # no model call: nothing for agent_turn
    assert book.reactions(111111111) == [Reaction(111111111, 11, 111111111, ("👍",), 1763800060)]
    # Changed to 👎 later, then taken off: the latest stands (an older one arriving late
    # never replaces it).
    post(webhook, reaction(["👎"], date=1763800090))
    post(webhook, reaction(["❤"], date=1763800070))
    assert book.reactions(111111111)[0].emojis == ("👎",)
    post(webhook, reaction([], date=1763800100))
    assert book.reactions(111111111)[0].emojis == ()


def test_a_reaction_of_a_stranger_is_refused_and_not_recorded() -> None:
    queue, book = MemoryQueue(), MemoryFeedbackBook()
    answer = answer_of(
        post(make_webhook(queue, allow="222222222", feedback=book), reaction(["👍"]))
    )
    assert answer["status"] == "refused"
    assert book.reacted == {} and queue.sent == []


def test_a_reaction_in_a_private_chat_by_someone_else_is_ignored() -> None:
    queue, book = MemoryQueue(), MemoryFeedbackBook()
    forged = reaction(["👍"], user={"id": 222222222, "is_bot": False, "first_name": "Bob"})
    answer = answer_of(post(make_webhook(queue, allow="*", feedback=book), forged))
    assert answer["status"] == "ignored" and book.reacted == {}


def test_a_reaction_not_recorded_is_retried_by_telegram() -> None:
    book = MemoryFeedbackBook()
    book.fail = True
    answer = answer_of(post(make_webhook(MemoryQueue(), feedback=book), reaction(["👍"])))
    assert (answer["code"], answer["error"]) == (503, "try again later")


def test_an_edit_is_recorded_and_queued_as_a_short_turn() -> None:
    queue, book = MemoryQueue(), MemoryFeedbackBook()
    webhook = make_webhook(queue, feedback=book)
    update = edited("Hi! What can you do for me in Lisbon?")
    answer = answer_of(post(webhook, update))
    assert (answer["code"], answer["status"], answer["method"]) == (200, "queued", "sendChatAction")
    ((job, group, dedup_id),) = queue.sent
    assert (group, dedup_id) == ("telegram:111111111", "update-800000008")
    assert job.model_dump()["update"] == update  # queued whole, as Telegram sent it
    assert book.latest_edit("telegram:111111111", 10) == Edit(
        "telegram:111111111",
        111111111,
        10,
        800000008,
        1763800030,
        "Hi! What can you do for me in Lisbon?",
    )
    inbound = to_inbound(Update.model_validate(update))
    assert isinstance(inbound, InboundMessage) and inbound.edited
    assert inbound.message_id == 10 and inbound.command is None
    assert inbound.text == (
        'The user edited an earlier message. It now says: "Hi! What can you do for me in '
        'Lisbon?"\nAnswer briefly, taking the change into account.'
    )


def test_an_edited_command_is_no_command_and_raises_no_stop_flag() -> None:
    queue = MemoryQueue()
    webhook = make_webhook(queue)
    post(webhook, edited("/stop"))
    inbound = to_inbound(Update.model_validate(edited("/stop")))
    assert isinstance(inbound, InboundMessage) and inbound.command is None
    assert len(queue.sent) == 1


def test_an_older_edit_arriving_late_does_not_replace_a_newer_one() -> None:
    book = MemoryFeedbackBook()
    webhook = make_webhook(MemoryQueue(), feedback=book)
    post(webhook, edited("second", edit_date=1763800050, update_id=800000009))
    post(webhook, edited("first", edit_date=1763800040, update_id=800000010))
    latest = book.latest_edit("telegram:111111111", 10)
    assert latest is not None and latest.text == "second"


def test_an_edit_not_recorded_is_still_queued() -> None:
    queue, book = MemoryQueue(), MemoryFeedbackBook()
    book.fail = True
    answer = answer_of(post(make_webhook(queue, feedback=book), edited("later")))
    assert answer["status"] == "queued" and len(queue.sent) == 1


def test_an_edit_in_a_group_is_ignored_until_its_turn_checks_the_group_policy() -> None:
    queue = MemoryQueue()
    update = edited("@nano_lambda_bot now?")
    update["edited_message"]["chat"] = {"id": -1001234567890, "type": "supergroup", "title": "T"}
    answer = answer_of(post(make_webhook(queue, allow="*"), update))
    assert answer["status"] == "ignored" and queue.sent == []


def test_an_edit_of_a_stranger_is_refused() -> None:
    queue = MemoryQueue()
    answer = answer_of(post(make_webhook(queue, allow="222222222"), edited("hi")))
    assert answer["status"] == "refused" and queue.sent == []


# -- core/feedback.py -------------------------------------------------------------------------


def test_a_reaction_belongs_to_the_exchange_whose_answer_it_is_on() -> None:
    asked = [10, 14, 20]  # the user's messages; the bot's answers are in between
    assert exchange_of(11, asked) == 10
    assert exchange_of(19, asked) == 14
    assert exchange_of(25, asked) == 20
    assert exchange_of(14, asked) is None  # the person's own message
    assert exchange_of(3, asked) is None


def test_the_feedback_line_counts_messages_per_emoji() -> None:
    reactions = [
        Reaction(1, 11, 1, ("👍",), 0),
        Reaction(1, 13, 1, ("👍", "🔥"), 0),
        Reaction(1, 15, 1, ("👎",), 0),
        Reaction(1, 17, 1, (), 0),  # taken off
    ]
    assert feedback_line(reactions) == "Reactions to answers: 👍 2 · 🔥 1 · 👎 1"
    assert feedback_line([]) == "Reactions to answers: none yet"


@pytest.mark.parametrize(
    ("before", "expected"),
    [
        (
            "What about Lisbon?",
            'The user edited a message you already answered. It said: "What about Lisbon?"\n'
            'It now says: "What about Porto?"\nAnswer briefly, taking the change into account.',
        ),
        (
            None,
            'The user edited an earlier message. It now says: "What about Porto?"\n'
            "Answer briefly, taking the change into account.",
        ),
    ],
)
def test_an_answered_edit_says_what_changed(before: str | None, expected: str) -> None:
    edit = Edit("telegram:1", 1, 10, 2, 3, "What about Porto?")
    assert edit_turn_text(before, edit) == expected
    assert not answered_unchanged(before, edit)
    assert answered_unchanged("What about Porto?", edit)  # its turn took the edit: no turn
