"""Speech to text through litellm, for voice notes and audio (`TRANSCRIPTION_MODEL`)."""

from __future__ import annotations

import importlib
from typing import Any

from nanobot_lambda.core.errors import ModelError
from nanobot_lambda.core.model import Transcript
from nanobot_lambda.core.ports import Transcriber
from nanobot_lambda.settings import AgentSettings


def provider_of(model: str) -> str:
    """litellm's provider prefix of a model string; bare names are OpenAI's (e.g. whisper-1)."""
    return model.split("/", 1)[0].lower() if "/" in model else "openai"


class LitellmTranscriber:
    """Speech to text through `litellm.transcription`.

    Credentials: `TRANSCRIPTION_API_KEY`/`_BASE` when set; otherwise the chat model's key and
    base URL, but only when both models belong to the same provider, so that one provider's
    key is never sent to another; otherwise litellm's own provider variables (OPENAI_API_KEY…).
    litellm is imported on the first transcription, so building this costs nothing.
    """

    def __init__(self, model: str, settings: AgentSettings) -> None:
        self._model = model
        self._options: dict[str, Any] = {
            "timeout": settings.llm_timeout_seconds,
            "max_retries": settings.llm_num_retries,
        }
        key, base = settings.transcription_api_key, settings.transcription_api_base
        if key is None and base is None and provider_of(model) == provider_of(settings.llm_model):
            key, base = settings.llm_api_key, settings.llm_api_base
        if base:
            self._options["api_base"] = base
        if key is not None:
            self._options["api_key"] = key.get_secret_value()

    def transcribe(self, filename: str, data: bytes) -> Transcript:
        # First litellm_model, which configures litellm before importing it (bundled cost map
        # instead of a download, quiet loggers); in agent_turn it is already loaded.
        importlib.import_module("nanobot_lambda.adapters.llm.litellm_model")
        import litellm

        try:
            response = litellm.transcription(
                model=self._model, file=(filename, data), **self._options
            )
        except Exception as error:
            # The type and status only: provider errors may quote the request.
            status = getattr(error, "status_code", None)
            raise ModelError(
                f"transcription failed ({type(error).__name__}, status {status})"
            ) from None
        text = str(getattr(response, "text", "") or "").strip()
        cost = (getattr(response, "_hidden_params", None) or {}).get("response_cost")
        return Transcript(text, float(cost) if isinstance(cost, int | float) else None)


def transcriber_for(settings: AgentSettings) -> Transcriber | None:
    """The configured transcriber, or None when `TRANSCRIPTION_MODEL` is unset."""
    if not settings.transcription_model:
        return None
    return LitellmTranscriber(settings.transcription_model, settings)
