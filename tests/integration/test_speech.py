"""Voice replies' speech through litellm, against the scripted server's /audio/speech (OpenAI's
text to speech): what is read aloud, in which format, with which key; and its failures."""

from __future__ import annotations

import pytest

from nanobot_lambda.adapters.llm.speech import MAX_SPOKEN_CHARS, LitellmSpeaker, spoken
from nanobot_lambda.core.errors import ModelError
from nanobot_lambda.settings import AgentSettings
from tests.support.scripted_model import ScriptedModelServer
from tests.support.settings import AGENT_ENV


def speaker(server: ScriptedModelServer, **extra: str) -> LitellmSpeaker:
    settings = AgentSettings.model_validate(
        {**AGENT_ENV, **server.env(api_key="sk-test-123"), "LLM_NUM_RETRIES": "0", **extra}
    )
    return LitellmSpeaker(ScriptedModelServer.SPEECH_MODEL, settings.tts_voice, settings)


def test_the_answer_is_read_aloud_as_ogg_opus_with_our_key(
    model_server: ScriptedModelServer,
) -> None:
    speech = speaker(model_server).speak("Sure, **milk** is on [your list](https://x.example).")

    assert speech.audio == ScriptedModelServer.SPEECH_AUDIO
    assert speech.cost_usd is not None and speech.cost_usd > 0  # tts-1 is priced per character
    (request,) = model_server.speeches
    assert request["model"] == "tts-1" and request["voice"] == "alloy"
    assert request["response_format"] == "opus"  # Ogg Opus, what Telegram plays as a voice note
    assert request["input"] == "Sure, milk is on your list."


def test_a_speech_failure_is_a_model_error_without_the_key(
    model_server: ScriptedModelServer,
) -> None:
    model_server.speech_failures = 1
    with pytest.raises(ModelError, match="speech failed") as error:
        speaker(model_server).speak("hello")
    assert "sk-test-123" not in str(error.value)


@pytest.mark.parametrize(
    ("markdown", "read"),
    [
        ("# Title\nSome *text* and `code`.", "Title Some text and code ."),
        ("Before\n```python\nprint(1)\n```\nafter", "Before after"),
        ("> quoted | cell", "quoted cell"),
    ],
)
def test_what_is_read_aloud_is_the_words(markdown: str, read: str) -> None:
    assert spoken(markdown) == read


def test_a_long_answer_is_read_up_to_a_sentence_within_the_limit() -> None:
    text = "A sentence of some length here. " * 300
    read = spoken(text)
    assert len(read) <= MAX_SPOKEN_CHARS and read.endswith(".")
