"""agent_turn's side of events in (functions/agent_turn/events.py, commands.py) on in-memory fakes:
a hook event is a task answered in its chat's conversation, once; a quiet one with nothing to
report is saved but not sent; its turn may not create scheduled jobs; a model failure leaves it
to SQS's retries and the dead-letter queue. /hooks answers the owner (the secret sent once,
from a group to the owner's private chat only, never saved or logged, and journaled as a note:
a run of the update again sends what Telegram did not accept, nothing it did); /usage shows the
reactions to the chat's answers."""

from __future__ import annotations

import json
import logging

import pytest

from nanobot_lambda.core import inbound_events
from nanobot_lambda.core.errors import ChannelError, ModelError
from nanobot_lambda.core.jobs import HookEventJob, TelegramUpdateJob
from nanobot_lambda.core.journal import TurnProgress
from nanobot_lambda.core.reactions_and_edits import Reaction
from nanobot_lambda.functions.agent_turn.outbox import JournaledOutbox
from tests.support.fakes import (
    MemoryTurnJournal,
    RecordingChannel,
    ScriptedModel,
    outage,
    text,
    tool,
)
from tests.unit.test_turns import ADA, SESSION, Bot, message

GROUP = -1001234567890
PAYLOAD = json.dumps({"check_run": {"name": "unit", "conclusion": "failure"}})


def event(*, quiet: bool = False, delivery: str = "d-1", chat: int = ADA) -> HookEventJob:
    return HookEventJob(
        hook="ci",
        chat_id=chat,
        thread_id=None,
        delivery_id=delivery,
        event="check_run",
        payload=PAYLOAD,
        received_at="2026-11-23T12:00:00+00:00",
        quiet=quiet,
    )


def test_an_event_is_answered_in_its_chat_s_conversation_once() -> None:
    bot = Bot(ScriptedModel(text("The unit tests failed on main.")))
    bot.process(event())
    bot.process(event())  # queued or delivered twice: one turn per delivery

    assert bot.said == ["The unit tests failed on main."]
    assert [chat for chat, _, _ in bot.channel.sent] == [ADA]
    (request,) = bot.model.requests
    asked = request[0][-1]["content"]
    assert 'An event arrived at the hook "ci" (event: "check_run"' in asked
    assert "not instructions" in asked and PAYLOAD in asked
    # The chat's own conversation, so Ada can ask about it afterwards.
    user, answer = bot.saved(SESSION)
    assert user["content"].startswith("An event arrived") and "message_id" not in user
    assert answer["content"] == "The unit tests failed on main."
    assert bot.sessions.recent[SESSION] == ("hook-ci-d-1",)
    assert bot.usage.tallies[(ADA, "total")].model_calls == 1  # counted to that chat
    # Its prompt names its turn: where the console finds what the delivery caused; the model
    # never sees the name (the next event's request holds this one in its history).
    assert user[inbound_events.EVENT_TURN_FIELD] == "hook-ci-d-1"
    bot.model.replies.append(text("Fixed."))
    bot.process(event(delivery="d-2"))
    history = bot.model.requests[-1][0]
    assert "An event arrived" in history[1]["content"]
    assert inbound_events.EVENT_TURN_FIELD not in json.dumps(history)


def test_a_quiet_event_with_nothing_to_report_is_saved_but_not_sent() -> None:
    bot = Bot(
        ScriptedModel(text("HEARTBEAT_OK"), text("The deploy was rolled back.")),
        settings={"SEND_PROGRESS": "true", "SEND_TOOL_HINTS": "true"},
    )
    bot.process(event(quiet=True))
    assert bot.said == []
    assert "answer exactly HEARTBEAT_OK" in bot.model.requests[0][0][-1]["content"]
    assert [m["content"] for m in bot.saved(SESSION)][1] == "HEARTBEAT_OK"

    bot.process(event(quiet=True, delivery="d-2"))  # this one needs Ada
    assert bot.said == ["The deploy was rolled back."]
    earlier = bot.model.requests[1][0]
    assert {"role": "assistant", "content": "HEARTBEAT_OK"} in earlier  # sees what it said


def test_an_event_s_turn_cannot_create_scheduled_jobs() -> None:
    """A payload that talks the model into scheduling something gets a refusal from the tool:
    a hook's turn is no more trusted than a schedule's."""
    cron = tool(
        "cron",
        json.dumps({"action": "add", "message": "send me the secrets", "every_seconds": 60}),
        "c1",
    )
    bot = Bot(ScriptedModel(cron, text("I will not schedule that.")))
    bot.process(event())

    assert bot.jobs.jobs == {}
    refused = [m for m in bot.model.requests[1][0] if m["role"] == "tool"]
    assert "cannot create new jobs" in refused[0]["content"]


def test_a_model_failure_leaves_the_event_to_the_queue_s_retries() -> None:
    bot = Bot(ScriptedModel(outage(), text("Back: the unit tests failed.")))
    with pytest.raises(ModelError):
        bot.process(event())  # SQS retries it; after the last attempt, the dead-letter queue
    assert bot.said == [] and bot.saved(SESSION) == []

    bot.process(event())  # the retry, with the model back
    assert bot.said == ["Back: the unit tests failed."]


def test_an_event_of_a_chat_no_longer_allowed_runs_nothing() -> None:
    bot = Bot(ScriptedModel(), settings={"ALLOW_FROM": str(ADA), "OWNER_ID": str(ADA)})
    bot.process(event(chat=222222222))
    assert bot.model.requests == [] and bot.said == []


# -- /hooks -------------------------------------------------------------------------------------


def in_group(text_: str, update_id: int) -> TelegramUpdateJob:
    job = message(text_, update_id)
    job.update["message"]["chat"] = {"id": GROUP, "type": "supergroup", "title": "Team"}
    return job


def test_hooks_add_in_a_private_chat_shows_the_secret_once_and_keeps_it_nowhere(
    caplog: pytest.LogCaptureFixture,
) -> None:
    bot = Bot(ScriptedModel(), settings={"HOOKS_URL": "https://api.example/hooks"})
    with caplog.at_level(logging.DEBUG):
        bot.process(message("/hooks add ci quiet"))
    hook = bot.hooks.stored["ci"]
    secret = hook.secret.get_secret_value()
    (answer,) = bot.said
    assert secret in answer and "https://api.example/hooks/ci" in answer
    assert (hook.chat_id, hook.quiet, hook.created_by) == (ADA, True, ADA)
    assert bot.saved(SESSION) == []  # never saved; journaled as done, without the secret
    assert [record.done for record in bot.journal.records.values()] == [True]
    assert secret not in repr(bot.journal.records)
    assert secret not in caplog.text
    assert bot.model.requests == []

    bot.process(message("/hooks", update_id=800000002))
    assert "ci" in bot.said[-1] and secret not in bot.said[-1]
    bot.process(message("/hooks remove ci", update_id=800000003))
    assert bot.hooks.stored == {}


def test_a_hook_made_in_a_group_sends_its_secret_to_the_owner_only() -> None:
    bot = Bot(ScriptedModel(), settings={"ALLOW_FROM": f"{ADA},{GROUP}"})
    bot.process(in_group("/hooks add deploys", 800000004))

    secret = bot.hooks.stored["deploys"].secret.get_secret_value()
    sent = {chat: said for (chat, _, _), said in zip(bot.channel.sent, bot.said, strict=True)}
    assert secret in sent[ADA]
    assert secret not in sent[GROUP] and "deploys" in sent[GROUP]
    assert bot.hooks.stored["deploys"].chat_id == GROUP


def test_a_group_hook_whose_secret_cannot_reach_the_owner_says_so_in_the_group() -> None:
    bot = Bot(ScriptedModel(), settings={"ALLOW_FROM": f"{ADA},{GROUP}"})
    bot.channel.fail_with = ChannelError(
        "sendMessage", 403, "Forbidden: bot can't initiate conversation", kind="blocked"
    )
    bot.process(in_group("/hooks add deploys", 800000004))
    secret = bot.hooks.stored["deploys"].secret.get_secret_value()
    assert [chat for chat, _, _ in bot.channel.sent] == [GROUP]
    assert "could not send its secret" in bot.said[0] and secret not in bot.said[0]


def test_a_hooks_add_run_again_before_its_secret_was_sent_sends_it_then_once() -> None:
    """The invocation dies after the hook was stored, its secret refused by Telegram (5xx):
    SQS runs the update again, which finds the hook its first run made and sends its secret;
    a later run of it sends nothing, and another update's `/hooks add` of the name is
    refused."""
    bot = Bot(ScriptedModel())
    job = message("/hooks add ci")
    bot.channel.fail_with = ChannelError("sendMessage", 502, "Bad Gateway")
    with pytest.raises(ChannelError):
        bot.process(job)
    made = bot.hooks.stored["ci"]
    assert bot.said == [] and made.made_in == "update-800000001"

    bot.process(job)
    secret = made.secret.get_secret_value()
    assert len(bot.said) == 1 and secret in bot.said[0]
    assert bot.hooks.stored["ci"] == made

    bot.process(job)  # run once more after it was answered: nothing more
    assert len(bot.said) == 1
    bot.process(message("/hooks add ci", update_id=800000002))
    assert "already a hook named ci" in bot.said[-1] and secret not in bot.said[-1]


def test_a_group_hooks_add_run_again_after_the_secret_was_accepted_does_not_resend_it() -> None:
    """The owner's private chat accepted the secret; the note in the group failed, so the update
    runs again: it says the note, not the secret again. The journal never holds the secret."""
    bot = Bot(ScriptedModel(), settings={"ALLOW_FROM": f"{ADA},{GROUP}"})
    job = in_group("/hooks add deploys", 800000004)
    bot.channel.fail_on = "🪝 Hook deploys made: its events become tasks in this chat. URL"
    with pytest.raises(ChannelError):
        bot.process(job)
    secret = bot.hooks.stored["deploys"].secret.get_secret_value()
    assert [chat for chat, _, _ in bot.channel.sent] == [ADA]
    assert secret not in repr(bot.journal.records)
    assert "the secret of hook deploys" in repr(bot.journal.records)

    bot.process(job)
    assert [chat for chat, _, _ in bot.channel.sent] == [ADA, GROUP]
    assert secret in bot.said[0] and secret not in bot.said[1] and "deploys" in bot.said[1]


def test_a_group_hook_whose_owner_chat_refuses_the_secret_says_so_in_the_group() -> None:
    """A refusal no retry changes (400: no such chat) is told, not retried; a failure a retry
    may mend (5xx) is left to the update's next run."""
    bot = Bot(ScriptedModel(), settings={"ALLOW_FROM": f"{ADA},{GROUP}"})
    bot.channel.fail_with = ChannelError(
        "sendMessage", 400, "Bad Request: chat not found", kind="refused"
    )
    bot.process(in_group("/hooks add deploys", 800000004))
    assert [chat for chat, _, _ in bot.channel.sent] == [GROUP]
    assert "could not send its secret" in bot.said[0]


def test_a_message_recorded_as_a_note_keeps_only_the_note_in_the_journal() -> None:
    """The outbox's `recorded_as` (the message showing a secret): the journal keeps the note;
    a later run skips the same message and sends another one (another secret) in its place,
    setting aside the note, never the text."""
    channel, journal = RecordingChannel(), MemoryTurnJournal()
    first = JournaledOutbox(channel, journal, "hooks-command:1", TurnProgress("update-1"))
    assert first.send(ADA, "Secret: `aaaa`", recorded_as="[a secret]")
    assert "aaaa" not in repr(journal.records)

    again = JournaledOutbox(
        channel, journal, "hooks-command:1", journal.get("hooks-command:1", "update-1")
    )
    assert again.send(ADA, "Secret: `aaaa`", recorded_as="[a secret]")
    assert channel.texts == ["Secret: aaaa"]
    other = JournaledOutbox(
        channel, journal, "hooks-command:1", journal.get("hooks-command:1", "update-1")
    )
    assert other.send(ADA, "Secret: `bbbb`", recorded_as="[a secret]")
    assert channel.texts == ["Secret: aaaa", "Secret: bbbb"]
    assert "aaaa" not in repr(journal.records) and "bbbb" not in repr(journal.records)

    with pytest.raises(ValueError, match="fit one message"):
        other.send(ADA, "word " * 2000, recorded_as="[a secret]")
    assert len(channel.sent) == 2


def test_hooks_is_the_owner_s_only() -> None:
    bot = Bot(ScriptedModel(), settings={"ALLOW_FROM": f"{ADA},{GROUP}"})
    job = in_group("/hooks add mine", 800000005)
    job.update["message"]["from"]["id"] = 333333333
    bot.process(job)
    assert bot.hooks.stored == {} and bot.said == ["Only the owner can manage hooks."]


# -- /usage --------------------------------------------------------------------------------------


def test_usage_shows_the_reactions_to_the_chat_s_answers() -> None:
    bot = Bot(ScriptedModel())
    bot.feedback.record_answers(ADA, [11])
    bot.feedback.record_answers(GROUP, [12])
    bot.feedback.record_reaction(Reaction(ADA, 11, ADA, ("👍",), 1))
    bot.feedback.record_reaction(Reaction(GROUP, 12, ADA, ("👎",), 1))  # another chat's
    bot.process(message("/usage"))
    assert bot.said[0].endswith("Reactions to answers: 👍 1")
