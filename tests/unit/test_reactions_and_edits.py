"""Reactions and edits through the webhook (core/reactions_and_edits.py), on in-memory stores: a
reaction is recorded and starts no turn; an edit is recorded and queued as a short turn; both follow
the allow-list like messages."""

from __future__ import annotations

import json
from typing import Any

import pytest

from nanobot_lambda.adapters.telegram.contents import message_text
from nanobot_lambda.adapters.telegram.inbound import InboundMessage, to_inbound
from nanobot_lambda.adapters.telegram.models import Message, Update
from nanobot_lambda.adapters.telegram.reactions_and_edits import as_edited, edit_of
from nanobot_lambda.core.jobs import TelegramUpdateJob
from nanobot_lambda.core.reactions_and_edits import (
    Edit,
    Reaction,
    answered_message,
    answered_unchanged,
    edit_turn,
    edit_turn_text,
    exchange_of,
    feedback_line,
)
from tests.conftest import album_updates, telegram_update
from tests.support.fakes import MemoryFeedbackBook, MemoryQueue, ScriptedModel, text
from tests.unit.test_turns import ADA, SESSION, Bot, message
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


def test_an_edit_in_a_group_is_recorded_and_queued_for_its_turn_to_judge() -> None:
    """The webhook cannot know the bot's name: like a group message, the edit is queued in the
    group's order and its turn checks the group policy (below)."""
    queue, book = MemoryQueue(), MemoryFeedbackBook()
    update = edited("@nano_lambda_bot now?")
    update["edited_message"]["chat"] = {"id": -1001234567890, "type": "supergroup", "title": "T"}
    answer = answer_of(post(make_webhook(queue, allow="*", feedback=book), update))
    assert answer["status"] == "queued"
    assert [group for _, group, _ in queue.sent] == ["telegram:-1001234567890"]
    assert book.latest_edit("telegram:-1001234567890", 10) is not None


def test_an_edit_of_a_stranger_is_refused() -> None:
    queue = MemoryQueue()
    answer = answer_of(post(make_webhook(queue, allow="222222222"), edited("hi")))
    assert answer["status"] == "refused" and queue.sent == []


# -- core/reactions_and_edits.py -------------------------------------------------------------------


def test_a_reaction_belongs_to_the_exchange_whose_answer_it_is_on() -> None:
    asked = [10, 14, 20]  # the user's messages; the bot's answers are in between
    assert exchange_of(11, asked) == 10
    assert exchange_of(19, asked) == 14
    assert exchange_of(25, asked) == 20
    assert exchange_of(14, asked) is None  # the person's own message
    assert exchange_of(3, asked) is None


def test_usage_counts_the_reactions_to_the_bots_own_messages_only() -> None:
    """A reaction is recorded on whatever message it is on; /usage counted them all as
    reactions to answers, a person's reaction to their own message too."""
    bot = Bot(ScriptedModel(text("Lisbon, in spring.")))
    bot.process(message("Where should I go?"))
    answer = len(bot.channel.sent)  # the fake Bot API numbers the messages it is sent
    assert bot.feedback.answers == {(ADA, answer)}
    asked = telegram_update("text_private")["message"]["message_id"]
    bot.feedback.record_reaction(Reaction(ADA, answer, ADA, ("👍",), 1763800100))
    bot.feedback.record_reaction(Reaction(ADA, asked, ADA, ("🔥",), 1763800101))  # their own
    bot.feedback.record_reaction(Reaction(ADA, 990, ADA, ("👎",), 1763800102))  # not the bot's
    bot.process(message("/usage", update_id=800000002))
    assert bot.said[-1].endswith("Reactions to answers: 👍 1")


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


def test_an_edit_s_turn_finds_its_message_as_its_own_turn_saved_it() -> None:
    edit = Edit("telegram:1", 1, 10, 2, 300, "What about Porto?")
    history = [
        {"role": "user", "content": "What about Lisbon?", "message_id": 10},
        {"role": "assistant", "content": "Lisbon is lovely."},
        {"role": "user", "content": "(an earlier edit's turn)", "message_id": 10, "edited": True},
    ]
    saved = answered_message(history, 10)
    assert saved is not None and saved["content"] == "What about Lisbon?"
    assert answered_message(history, 11) is None
    assert edit_turn(saved, edit) == edit_turn_text("What about Lisbon?", edit)
    assert edit_turn(None, edit) == edit_turn_text(None, edit)  # no longer in the history
    # Its turn took this edit, or a later one: nothing left to say.
    assert edit_turn({"content": "[photo] Porto", "edit_date": 300}, edit) is None
    assert edit_turn({"content": "[photo] Porto", "edit_date": 301}, edit) is None
    assert edit_turn({"content": "What about Porto?"}, edit) is None  # the same text
    assert edit_turn({"content": "Lisbon", "edit_date": 299}, edit) is not None


def test_an_edit_s_turn_compares_with_what_the_last_edit_s_turn_saw() -> None:
    monday = {"role": "user", "content": "My flight is on Monday", "message_id": 10}
    tuesday_turn = {
        "role": "user",
        "content": "(the Tuesday edit's short turn)",
        "message_id": 10,
        "edited": True,
        "edit_date": 300,
        "edit_text": "My flight is on Tuesday",
    }
    history = [monday, {"role": "assistant", "content": "Monday, noted."}, tuesday_turn]
    saved = answered_message(history, 10)
    assert saved is tuesday_turn
    # Sent again under a new update id (the same edit_date), or the formatting changed (a later
    # edit_date, the same text): nothing to say.
    assert edit_turn(saved, Edit("telegram:1", 1, 10, 3, 300, "My flight is on Tuesday")) is None
    assert edit_turn(saved, Edit("telegram:1", 1, 10, 4, 360, "My flight is on Tuesday")) is None
    wednesday = Edit("telegram:1", 1, 10, 5, 420, "My flight is on Wednesday")
    assert edit_turn(saved, wednesday) == edit_turn_text("My flight is on Tuesday", wednesday)
    # An edit's turn saved before it kept the text it saw: passed over, the message's own is used.
    old_turn = {key: value for key, value in tuesday_turn.items() if key != "edit_text"}
    assert answered_message([monday, old_turn], 10) is monday


def test_a_message_as_an_edit_left_it_keeps_its_files_and_takes_the_new_caption() -> None:
    sent = Message.model_validate(album_updates(1)[0]["message"])
    assert sent.caption is not None
    now = sent.model_copy(update={"caption": "Porto, not Lisbon"})
    edit = Edit("telegram:1", 1, sent.message_id, 2, 300, message_text(now))
    edited_message = as_edited(sent, edit)
    assert edited_message.caption == "Porto, not Lisbon" and edited_message.photo == sent.photo
    plain = Message.model_validate(telegram_update("text_private")["message"])
    assert as_edited(plain, Edit("k", 1, 10, 2, 300, "Porto?")).text == "Porto?"


# -- agent_turn: the turns of edits ------------------------------------------------------------


def edit_job(text_: str, *, edit_date: int = 1763800030, update_id: int = 800000008) -> Any:
    return TelegramUpdateJob(update=edited(text_, edit_date=edit_date, update_id=update_id))


def recorded_edit(update: dict[str, Any]) -> Edit:
    """What the webhook records before it queues the edit."""
    edit = edit_of(Update.model_validate(update))
    assert edit is not None
    return edit


def test_an_edit_of_an_answered_message_is_a_short_turn_saying_what_changed() -> None:
    bot = Bot(ScriptedModel(text("Lisbon is lovely in May."), text("Porto too.")))
    bot.process(message("What about Lisbon?"))
    bot.process(edit_job("What about Porto?"))

    assert bot.said == ["Lisbon is lovely in May.", "Porto too."]
    asked = bot.model.requests[-1][0][-1]["content"]
    assert 'It said: "What about Lisbon?"' in asked and 'It now says: "What about Porto?"' in asked
    *_, user, answer = bot.saved()
    assert (user["message_id"], user["edited"], answer["content"]) == (10, True, "Porto too.")
    assert user["content"].startswith("The user edited a message you already answered.")
    bot.process(edit_job("What about Porto?"))  # delivered again
    assert len(bot.said) == 2


def test_an_edit_is_answered_once_however_often_telegram_sends_its_text() -> None:
    bot = Bot(ScriptedModel(text("Monday, noted."), text("Tuesday then"), text("Wednesday then")))
    bot.process(message("My flight is on Monday"))
    bot.process(edit_job("My flight is on Tuesday", edit_date=1763800030, update_id=800000008))
    # The same edit under a new update id, then the formatting changed (the text as it was).
    bot.process(edit_job("My flight is on Tuesday", edit_date=1763800030, update_id=800000009))
    bold = edited("My flight is on Tuesday", edit_date=1763800060, update_id=800000010)
    bold["edited_message"]["entities"] = [{"type": "bold", "offset": 16, "length": 7}]
    bot.process(TelegramUpdateJob(update=bold))

    assert bot.said == ["Monday, noted.", "Tuesday then"]
    assert len(bot.model.requests) == 2
    *_, user, _ = bot.saved()
    assert (user["edit_text"], user["edit_date"]) == ("My flight is on Tuesday", 1763800030)

    # Edited again: compared with what the last edit's turn saw, not the message as sent.
    bot.process(edit_job("My flight is on Wednesday", edit_date=1763800090, update_id=800000011))
    assert bot.said == ["Monday, noted.", "Tuesday then", "Wednesday then"]
    asked = bot.model.requests[-1][0][-1]["content"]
    assert 'It said: "My flight is on Tuesday"' in asked
    assert 'It now says: "My flight is on Wednesday"' in asked


def test_a_message_edited_before_its_turn_is_answered_as_it_reads_now_and_once() -> None:
    bot = Bot(ScriptedModel(text("Porto is lovely in May.")))
    bot.feedback.record_edit(recorded_edit(edited("What about Porto?")))  # before the turn ran
    bot.process(message("What about Lisbon?"))
    bot.process(edit_job("What about Porto?"))  # the edit's own turn, queued behind it

    assert bot.said == ["Porto is lovely in May."]
    assert len(bot.model.requests) == 1  # the edit's turn asked nothing
    assert bot.model.requests[0][0][-1]["content"].endswith("What about Porto?")
    assert "Lisbon" not in str(bot.model.requests[0][0][-1])
    user, _ = bot.saved()
    assert (user["content"], user["edit_date"]) == ("What about Porto?", 1763800030)


def test_a_later_edit_than_the_one_its_turn_took_is_answered() -> None:
    bot = Bot(ScriptedModel(text("Porto, then."), text("Faro, then.")))
    bot.feedback.record_edit(recorded_edit(edited("What about Porto?")))
    bot.process(message("What about Lisbon?"))
    bot.process(edit_job("What about Faro?", edit_date=1763800090, update_id=800000009))

    assert bot.said == ["Porto, then.", "Faro, then."]
    asked = bot.model.requests[-1][0][-1]["content"]
    assert 'It said: "What about Porto?"' in asked and 'now says: "What about Faro?"' in asked


def test_an_edit_of_a_message_no_longer_in_the_history_says_what_it_reads_now() -> None:
    bot = Bot(ScriptedModel(text("Porto, noted.")))
    bot.process(edit_job("What about Porto?"))
    asked = bot.model.requests[0][0][-1]["content"]
    assert "edited an earlier message" in asked and '"What about Porto?"' in asked
    assert bot.said == ["Porto, noted."]


def test_a_command_edited_before_its_turn_is_answered_as_sent() -> None:
    bot = Bot(ScriptedModel())
    bot.feedback.record_edit(recorded_edit(edited("What about Porto?")))
    bot.process(message("/help"))
    assert bot.said and "/usage" in bot.said[0] and bot.model.requests == []


def group_edit(text_: str, *, mention: bool = False, update_id: int = 800000008) -> Any:
    update = edited(text_, update_id=update_id)
    message = update["edited_message"]
    message["chat"] = {"id": -1001234567890, "type": "supergroup", "title": "T"}
    if mention:  # Telegram marks "@nano_lambda_bot" at the start as a mention
        message["entities"] = [{"type": "mention", "offset": 0, "length": 16}]
    return TelegramUpdateJob(update=update)


def test_a_group_edit_is_answered_when_the_message_as_edited_is_for_the_bot() -> None:
    group = {"ALLOW_FROM": f"{ADA},-1001234567890", "GROUP_POLICY": "mention"}
    bot = Bot(ScriptedModel(text("Porto, then.")), settings=group)
    bot.process(group_edit("Let's go to Porto"))  # for no one (GROUP_POLICY=mention): nothing
    assert bot.model.requests == [] and bot.said == []

    bot.process(group_edit("@nano_lambda_bot what about Porto?", mention=True, update_id=800000010))
    assert bot.said == ["Porto, then."]
    assert {chat for chat, _, _ in bot.channel.sent} == {-1001234567890}
    assert bot.saved(SESSION) == []  # the group's conversation, not Ada's
    (user, _) = bot.saved("telegram:-1001234567890")
    assert user["edited"] is True and "what about Porto?" in user["content"]
