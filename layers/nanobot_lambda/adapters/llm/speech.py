"""Text to speech through litellm, for voice replies (`TTS_MODEL`): the answer read aloud, as
OGG/Opus, the format Telegram plays as a voice note.

Credentials as for transcription: the chat model's key and base URL only for a model of the
same provider, otherwise litellm's own provider variables (OPENAI_API_KEY…). litellm is imported
on the first use, so building this costs nothing.
"""

from __future__ import annotations

import importlib
import re
from typing import Any

from nanobot_lambda.adapters.llm.transcription import provider_of
from nanobot_lambda.core.errors import ModelError
from nanobot_lambda.core.model import Speech
from nanobot_lambda.core.ports import Speaker
from nanobot_lambda.settings import AgentSettings

MAX_SPOKEN_CHARS = 4_000  # OpenAI's speech endpoints take 4,096 characters
_CODE_BLOCK = re.compile(r"```.*?(```|$)", re.DOTALL)
_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")
_MARKUP = re.compile(r"(^#{1,6}\s+|[*_~`>|]+)", re.MULTILINE)


def spoken(markdown: str) -> str:
    """What of a Markdown answer is read aloud: its words, without code blocks, link targets
    or markup characters, at most MAX_SPOKEN_CHARS (cut at a sentence where it can be)."""
    text = _CODE_BLOCK.sub(" ", markdown)
    text = _LINK.sub(r"\1", text)
    text = " ".join(_MARKUP.sub(" ", text).split())
    if len(text) <= MAX_SPOKEN_CHARS:
        return text
    cut = text[:MAX_SPOKEN_CHARS]
    end = cut.rfind(". ")
    return cut[: end + 1] if end > MAX_SPOKEN_CHARS // 2 else cut


class LitellmSpeaker:
    def __init__(self, model: str, voice: str, settings: AgentSettings) -> None:
        self._model = model
        self._options: dict[str, Any] = {
            "voice": voice,
            "response_format": "opus",  # Ogg Opus: what Telegram's sendVoice plays
            "timeout": settings.llm_timeout_seconds,
            "max_retries": settings.llm_num_retries,
        }
        if provider_of(model) == provider_of(settings.llm_model):
            if settings.llm_api_base:
                self._options["api_base"] = settings.llm_api_base
            if settings.llm_api_key is not None:
                self._options["api_key"] = settings.llm_api_key.get_secret_value()

    def speak(self, text: str) -> Speech:
        importlib.import_module("nanobot_lambda.adapters.llm.litellm_model")  # configures litellm
        import litellm

        try:
            response = litellm.speech(model=self._model, input=spoken(text), **self._options)
            audio = bytes(response.content)
            cost = _cost(response)
        except Exception as error:
            # The type and status only: provider errors may quote the request.
            status = getattr(error, "status_code", None)
            raise ModelError(f"speech failed ({type(error).__name__}, status {status})") from None
        if not audio:
            raise ModelError("speech failed (no audio in the answer)")
        return Speech(audio, cost)


def _cost(response: Any) -> float | None:
    """litellm's price for the call, when it knows one."""
    cost = (getattr(response, "_hidden_params", None) or {}).get("response_cost")
    return float(cost) if isinstance(cost, int | float) else None


def speaker_for(settings: AgentSettings) -> Speaker | None:
    """The configured speaker, or None when `TTS_MODEL` is unset (voice replies off)."""
    if not settings.tts_model:
        return None
    return LitellmSpeaker(settings.tts_model, settings.tts_voice, settings)
