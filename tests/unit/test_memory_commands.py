"""Compaction that loses nothing, told once; /compact, /new and /memory: agent_turn on fakes."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from nanobot_lambda.core import texts
from nanobot_lambda.core.bot_commands import command_menu
from nanobot_lambda.core.errors import ChannelError
from nanobot_lambda.core.jobs import TelegramUpdateJob
from nanobot_lambda.core.memory import HISTORY_FILE, MEMORY_FILE
from nanobot_lambda.core.model import ModelReply
from nanobot_lambda.core.scopes import Scope
from nanobot_lambda.core.sessions import Message
from tests.conftest import telegram_update
from tests.support.fakes import (
    MemoryRecallIndexObjects,
    MemoryWorkspace,
    ScriptedModel,
    StandInEmbedder,
    outage,
    text,
    tool,
)
from tests.unit.test_turns import ADA, SESSION, Bot, message

NOTICE = texts.load("compaction_notice")
BOB = 222222222


def summary(entry: str = "[2030-01-01 10:00] Chat.", memory: str = "- Ada") -> ModelReply:
    return tool("save_memory", json.dumps({"history_entry": entry, "memory_update": memory}))


def summaries(count: int) -> ScriptedModel:
    return ScriptedModel(*(summary(f"[2030-01-01 10:0{n}] Chat {n}.") for n in range(count)))


def answers(*words: str) -> ScriptedModel:
    return ScriptedModel(*(text(word) for word in words))


def say(bot: Bot, *words: str, first_id: int = 800000100) -> None:
    for offset, word in enumerate(words):
        bot.process(message(word, update_id=first_id + offset))


def exchange(n: int) -> list[Message]:
    return [{"role": "user", "content": f"question {n}"}, {"role": "assistant", "content": f"a{n}"}]


# -- the compaction notice -------------------------------------------------------------------


def test_automatic_consolidation_is_told_once_before_the_next_answer() -> None:
    cheap = summaries(2)
    bot = Bot(
        answers("One.", "Two.", "Three.", "Four.", "Five."),
        consolidation_model=cheap,
        settings={"HISTORY_WINDOW": "4"},
    )
    say(bot, "first", "second", "third")  # 6 messages > 4: the oldest 4 are summarised after it
    assert len(cheap.requests) == 1 and bot.said == ["One.", "Two.", "Three."]
    assert bot.sessions.noticed[SESSION] == 0 and bot.sessions.cursors[SESSION] == 4

    say(bot, "fourth", "fifth", first_id=800000200)

    assert bot.said == ["One.", "Two.", "Three.", NOTICE, "Four.", "Five."]
    assert bot.sessions.noticed[SESSION] == 4  # the fourth turn's save recorded it
    # The notice is the chat's, not the model's: it is not saved as said by the assistant.
    assert NOTICE not in [m.get("content") for m in bot.saved()]


def test_the_notice_is_sent_once_when_the_turn_dies_after_it() -> None:
    bot = Bot(
        answers("One.", "Two.", "Three.", "Four.", "Four."),  # the retry asks again
        consolidation_model=summaries(2),
        settings={"HISTORY_WINDOW": "4"},
    )
    say(bot, "first", "second", "third")
    bot.channel.fail_on = "Four."
    with pytest.raises(ChannelError):
        bot.process(message("fourth", update_id=800000200))
    assert bot.sessions.noticed[SESSION] == 0  # not saved: the notice is still due
    bot.process(message("fourth", update_id=800000200))  # SQS's retry

    assert bot.said == ["One.", "Two.", "Three.", NOTICE, "Four."]
    assert bot.sessions.noticed[SESSION] == 4


def test_a_consolidation_whose_process_died_is_still_told_by_the_next_turn() -> None:
    """The cursor and the notice being due are one write: nothing between them to lose."""
    bot = Bot(answers("Answer."), settings={"HISTORY_WINDOW": "4"})
    bot.sessions.messages[SESSION] = [*exchange(1), *exchange(2), *exchange(3)]
    bot.sessions.advance_cursor(SESSION, 0, 4)  # a consolidation, then the container died

    bot.process(message("hello"))

    assert bot.said == [NOTICE, "Answer."]


class Clock:
    """The time the test sets."""

    def __init__(self) -> None:
        self.now = datetime(2030, 5, 6, 7, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


def test_the_notice_is_told_at_most_once_per_interval_and_the_later_summaries_after_it() -> None:
    clock = Clock()
    bot = Bot(
        answers(*(f"A{n}." for n in range(1, 10))),
        consolidation_model=summaries(4),
        settings={"HISTORY_WINDOW": "4"},  # COMPACTION_NOTICE_INTERVAL_HOURS: 24 by default
        clock=clock,
    )
    say(bot, "1", "2", "3")  # summarised after the third
    say(bot, "4", first_id=800000200)  # told
    told_at = clock.now
    clock.now += timedelta(hours=23)
    say(bot, "5", "6", "7", first_id=800000300)  # summarised twice more: not told within 24 h
    assert bot.said.count(NOTICE) == 1 and len(bot.consolidation_model.requests) == 3
    assert bot.sessions.noticed_at[SESSION] == told_at
    assert bot.sessions.noticed[SESSION] < bot.sessions.cursors[SESSION]  # still due

    clock.now += timedelta(hours=1)
    say(bot, "8", first_id=800000400)  # a day after the notice: the summaries since are told

    assert bot.said[-2:] == [NOTICE, "A8."] and bot.said.count(NOTICE) == 2
    assert bot.sessions.noticed[SESSION] == bot.sessions.cursors[SESSION]
    assert bot.sessions.noticed_at[SESSION] == clock.now


def test_an_interval_of_zero_tells_every_summary() -> None:
    bot = Bot(
        answers(*(f"A{n}." for n in range(1, 8))),
        consolidation_model=summaries(3),
        settings={"HISTORY_WINDOW": "4", "COMPACTION_NOTICE_INTERVAL_HOURS": "0"},
    )
    say(bot, *(str(n) for n in range(1, 8)))  # summarised after the 3rd, 5th and 7th

    assert len(bot.consolidation_model.requests) == 3
    assert bot.said.count(NOTICE) == 2  # before the 4th and the 6th answer; the 8th tells more
    assert bot.said[3] == bot.said[6] == NOTICE


def test_compaction_notice_off_summarises_silently() -> None:
    bot = Bot(
        answers("One.", "Two.", "Three.", "Four."),
        consolidation_model=summaries(2),
        settings={"HISTORY_WINDOW": "4", "COMPACTION_NOTICE": "false"},
    )
    say(bot, "first", "second", "third", "fourth")

    assert bot.said == ["One.", "Two.", "Three.", "Four."]
    assert bot.sessions.cursors[SESSION] == 4


def test_a_session_past_its_window_is_summarised_before_the_request_and_told() -> None:
    """Nothing leaves what the model sees unsummarised: the messages the window would not send
    reach memory first (the consolidation after an earlier turn had failed)."""
    cheap = summaries(1)
    bot = Bot(answers("Answer."), consolidation_model=cheap, settings={"HISTORY_WINDOW": "4"})
    bot.sessions.messages[SESSION] = [exchange(n)[i] for n in range(1, 6) for i in (0, 1)]

    bot.process(message("hello"))

    transcript = cheap.requests[0][0][1]["content"]
    assert "USER: question 1" in transcript and "USER: question 4" in transcript
    assert bot.sessions.cursors[SESSION] == 8  # the newest exchange is kept
    (request,) = bot.model.requests
    assert [m.get("content") for m in request[0][1:-1]] == ["question 5", "a5"]
    assert bot.said == [NOTICE, "Answer."]


# -- /compact and /new -----------------------------------------------------------------------


def test_compact_summarises_all_but_the_newest_exchanges_and_says_how_many() -> None:
    cheap = summaries(1)
    bot = Bot(answers("One.", "Two.", "Three."), consolidation_model=cheap)
    say(bot, "first", "second", "third")

    bot.process(message("/compact", update_id=800000300))
    bot.process(message("/compact", update_id=800000301))

    transcript = cheap.requests[0][0][1]["content"]
    assert "USER: first" in transcript and "second" not in transcript
    assert bot.sessions.cursors[SESSION] == 2  # the last two exchanges stay as they were
    assert bot.said[-2:] == [
        texts.render("compact_done", count="2"),
        texts.load("compact_nothing"),
    ]
    assert len(cheap.requests) == 1  # nothing left to summarise: no model call


def test_compact_is_told_by_its_answer_not_by_a_notice_after_it() -> None:
    bot = Bot(answers("One.", "Two.", "Three.", "Four."), consolidation_model=summaries(1))
    say(bot, "first", "second", "third")
    bot.process(message("/compact", update_id=800000300))
    bot.process(message("fourth", update_id=800000400))

    assert bot.said[-2:] == [texts.render("compact_done", count="2"), "Four."]


def test_a_failed_compact_keeps_the_conversation_and_says_so() -> None:
    bot = Bot(
        answers("One.", "Two.", "Three."), consolidation_model=ScriptedModel(text("no tool call"))
    )
    say(bot, "first", "second", "third")

    bot.process(message("/compact", update_id=800000300))

    assert bot.said[-1] == texts.load("compact_failed")
    assert bot.sessions.cursors.get(SESSION, 0) == 0


def test_new_archives_everything_and_no_notice_follows() -> None:
    bot = Bot(answers("One.", "Two."), consolidation_model=summaries(1))
    say(bot, "first")
    bot.process(message("/new", update_id=800000300))
    bot.process(message("second", update_id=800000400))

    assert bot.said == ["One.", texts.load("new_session"), "Two."]
    assert bot.sessions.cursors[SESSION] == 2


def test_compact_and_memory_are_in_the_command_menu() -> None:
    commands = [entry["command"] for entry in command_menu()]
    assert "compact" in commands and "memory" in commands


# -- /memory ---------------------------------------------------------------------------------


def memory_versions(workspace: MemoryWorkspace, *contents: str) -> None:
    for content in contents:
        workspace.write(MEMORY_FILE, content.encode())


def from_person(text_: str, person: int, update_id: int) -> TelegramUpdateJob:
    update = telegram_update("text_private")
    update["update_id"] = update_id
    update["message"]["text"] = text_
    update["message"]["from"]["id"] = update["message"]["chat"]["id"] = person
    return TelegramUpdateJob(update=update)


def in_group(text_: str, sender: int, update_id: int) -> TelegramUpdateJob:
    update: dict[str, Any] = telegram_update("group_mention")
    update["update_id"] = update_id
    update["message"]["text"] = text_
    update["message"]["from"]["id"] = sender
    del update["message"]["entities"]
    return TelegramUpdateJob(update=update)


def test_memory_lists_the_owners_versions_and_restore_brings_one_back_once() -> None:
    bot = Bot(ScriptedModel())
    memory_versions(bot.workspace, "- likes tea\n", "- likes tea\n- lives in Lyon\n", "- (lost)\n")

    bot.process(message("/memory", update_id=800000500))
    assert "lives in Lyon" in bot.said[-1] and "(current)" in bot.said[-1]

    restore = message("/memory restore 2", update_id=800000501)
    bot.process(restore)
    bot.process(restore)  # delivered again: it restores nothing twice

    assert bot.workspace.files[MEMORY_FILE] == b"- likes tea\n- lives in Lyon\n"
    assert len(bot.workspace.history[MEMORY_FILE]) == 4  # one restore, written once
    assert bot.said[-2:] == [texts.render("memory_restored", path=MEMORY_FILE, number="2")] * 2
    assert bot.workspace.restores[(MEMORY_FILE, "v3")] == "update-800000501"
    assert bot.model.requests == []  # commands never reach the model


def test_a_person_sees_and_restores_their_own_scopes_memory_only() -> None:
    bot = Bot(ScriptedModel(), settings={"ALLOW_FROM": f"{ADA},{BOB}"})
    memory_versions(bot.workspace, "- the owner's secret\n", "- the owner's newer secret\n")
    bobs = bot.scope_workspace(Scope(f"people/{BOB}"))
    memory_versions(bobs, "- Bob likes chess\n", "- Bob likes nothing\n")

    bot.process(from_person("/memory", BOB, 800000600))
    assert "Bob likes" in bot.said[-1] and "secret" not in bot.said[-1]
    bot.process(from_person("/memory restore 2", BOB, 800000601))

    assert bobs.files[MEMORY_FILE] == b"- Bob likes chess\n"
    assert bot.workspace.files[MEMORY_FILE] == b"- the owner's newer secret\n"


def test_in_a_group_only_the_owner_may_see_or_restore_its_memory() -> None:
    bot = Bot(ScriptedModel(), settings={"ALLOW_FROM": f"{ADA},{BOB}"})
    group = bot.scope_workspace(Scope("groups/1001234567890"))
    memory_versions(group, "- the group's plan\n", "- overwritten\n")

    bot.process(in_group("/memory restore 2", BOB, 800000700))
    assert bot.said[-1] == texts.load("memory_owner_only")
    assert group.files[MEMORY_FILE] == b"- overwritten\n"

    bot.process(in_group("/memory restore 2", ADA, 800000701))
    assert group.files[MEMORY_FILE] == b"- the group's plan\n"


def test_a_restore_without_a_number_says_how() -> None:
    bot = Bot(ScriptedModel())
    bot.process(message("/memory restore", update_id=800000800))
    assert bot.said == [texts.render("memory_restore_usage", path=MEMORY_FILE)]


# -- indexing for recall at each job's end ---------------------------------------------------

DENTIST = "[2030-01-01 10:00] Booked the dentist, Dr. Moreau, for December 3rd."


def hybrid_bot(model: ScriptedModel, **options: Any) -> Bot:
    settings = {"EMBEDDING_MODEL": "openai/text-embedding-3-small", "ALLOW_FROM": f"{ADA},{BOB}"}
    return Bot(
        model,
        embedder=StandInEmbedder(),
        recall_indexes=MemoryRecallIndexObjects(),
        settings=settings,
        **options,
    )


def test_each_job_ends_by_indexing_its_own_scope_and_a_failed_job_indexes_nothing() -> None:
    bot = hybrid_bot(answers("Hi Bob.", "Hello.", "Hi Ada.", "Indexed."))
    bobs = Scope(f"people/{BOB}")
    bot.scope_workspace(bobs).write(HISTORY_FILE, f"{DENTIST}\n".encode())

    bot.process(from_person("hello", BOB, 800000900))  # Bob's job ends: his scope is indexed
    assert bobs in bot.recall_indexes.objects
    assert b"Moreau" in bot.recall_indexes.objects[bobs]
    embedded = len(bot.embedder.calls)

    bot.channel.fail_on = "Hello."  # Bob's next job dies before its end: nothing indexed
    bot.scope_workspace(bobs).write(HISTORY_FILE, f"{DENTIST}\n[2030-01-02 09:00] More.\n".encode())
    with pytest.raises(ChannelError):
        bot.process(from_person("again", BOB, 800000901))
    assert all("More." not in call for call in bot.embedder.calls)

    bot.process(message("hi"))  # then the owner's job: its own scope, none of Bob's entries
    assert b"Moreau" not in bot.recall_indexes.objects.get(Scope(), b"")
    assert all("More." not in call for call in bot.embedder.calls[embedded:])

    bot.process(from_person("and now?", BOB, 800000902))  # Bob's next job that ends: indexed
    assert any("[2030-01-02 09:00] More." in call for call in bot.embedder.calls)


def test_a_turn_the_model_failed_after_the_notice_records_it_too() -> None:
    bot = Bot(ScriptedModel(outage(), text("Answer.")), settings={"HISTORY_WINDOW": "4"})
    bot.sessions.messages[SESSION] = [*exchange(1), *exchange(2), *exchange(3)]
    bot.sessions.advance_cursor(SESSION, 0, 4)

    bot.process(message("hello"))  # told, then the apology: the turn is closed
    bot.process(message("again", update_id=800000002))

    assert bot.said == [NOTICE, texts.load("model_error"), "Answer."]
