"""Voice replies (TTS_MODEL): a voice note is answered with the text, then the same answer read
aloud as a voice note, each sent once; a text message gets text only; speech that fails costs
only the voice note.

Turns run on in-memory fakes (see test_turns.py)."""

from __future__ import annotations

import pytest

from nanobot_lambda.core.errors import ChannelError, ModelError
from nanobot_lambda.core.jobs import TelegramUpdateJob
from tests.conftest import telegram_update
from tests.support.fakes import RecordingSpeaker, ScriptedModel, text
from tests.unit.test_turns import Bot, message

ANSWER = "Sure, milk is on your list."


def voice_note() -> TelegramUpdateJob:
    return TelegramUpdateJob(update=telegram_update("voice"))


def bot(*replies: str) -> Bot:
    voiced = Bot(ScriptedModel(*(text(reply) for reply in replies)), speaker=RecordingSpeaker())
    voiced.channel.files["AwACAgQAAxkBAAIBVoice"] = b"OggS voice of the user"
    return voiced


def test_a_voice_note_is_answered_in_text_then_in_voice() -> None:
    voiced = bot(ANSWER)
    voiced.process(voice_note())

    assert voiced.said == [ANSWER]
    ((chat_id, sent, _),) = voiced.channel.files_sent
    assert (chat_id, sent.kind, sent.data) == (111111111, "voice", RecordingSpeaker.AUDIO)
    assert voiced.speaker is not None and voiced.speaker.spoken == [ANSWER]
    assert voiced.saved()[-1]["content"] == ANSWER  # the text stays the record


def test_a_text_message_gets_no_voice() -> None:
    voiced = bot(ANSWER)
    voiced.process(message("add milk to my list"))

    assert voiced.said == [ANSWER] and voiced.channel.files_sent == []
    assert voiced.speaker is not None and voiced.speaker.spoken == []


def test_speech_that_fails_costs_only_the_voice_note() -> None:
    voiced = bot(ANSWER)
    assert voiced.speaker is not None
    voiced.speaker.fail_with = ModelError("speech failed (APIConnectionError, status None)")
    voiced.process(voice_note())

    assert voiced.said == [ANSWER] and voiced.channel.files_sent == []
    assert voiced.saved()[-1]["content"] == ANSWER


def test_a_retry_after_the_voice_failed_sends_neither_answer_twice_nor_asks_again() -> None:
    voiced = bot(ANSWER)
    voiced.channel.fail_with = None
    original = voiced.channel.send_file

    def fail_once(*args: object, **kwargs: object) -> int:
        voiced.channel.send_file = original  # type: ignore[method-assign]
        raise ChannelError("sendVoice", 502, "Bad Gateway")

    voiced.channel.send_file = fail_once  # type: ignore[method-assign]
    with pytest.raises(ChannelError):
        voiced.process(voice_note())
    voiced.process(voice_note())  # SQS's retry

    assert voiced.said == [ANSWER]  # the text was recorded as sent: not again
    assert len(voiced.channel.files_sent) == 1
    assert len(voiced.model.requests) == 1  # the answer was recorded: the model is not asked


def test_a_voice_note_telegram_refuses_is_dropped_not_retried() -> None:
    voiced = bot(ANSWER)
    voiced.channel.fail_with = None

    def refuse(*args: object, **kwargs: object) -> int:
        raise ChannelError(
            "sendVoice", 400, "Bad Request: VOICE_MESSAGES_FORBIDDEN", kind="refused"
        )

    voiced.channel.send_file = refuse  # type: ignore[method-assign]
    voiced.process(voice_note())

    assert voiced.said == [ANSWER] and voiced.saved()[-1]["content"] == ANSWER
