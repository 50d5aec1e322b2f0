"""`ChatModels` on litellm: the model each chat's /model and /think choice asks for.

One `LitellmChatModel` and one `LitellmTokenCounter` per distinct choice, made on first use and
kept for the container's life (they hold no connection: litellm's clients are its own).
A preset is called with its own options (temperature, max_tokens, api_base) and the thinking
level as litellm's `reasoning_effort`; LLM_MODEL and its fallbacks stand behind it unchanged, so
a chat on a failing preset is still answered. Thinking "off" sends no reasoning option at all:
the provider's plain mode (Anthropic and Gemini then do not think; OpenAI's reasoning models
think at their lowest level, the least they allow).
"""

from __future__ import annotations

from typing import Any

from nanobot_lambda.adapters.llm.litellm_model import LitellmChatModel
from nanobot_lambda.adapters.llm.tokens import LitellmTokenCounter
from nanobot_lambda.core.model_choice import ModelChoice
from nanobot_lambda.settings import LlmSettings


def call_options(choice: ModelChoice) -> dict[str, Any]:
    """The litellm options a choice adds to its model's calls."""
    options: dict[str, Any] = {}
    preset = choice.preset
    if preset is not None:
        for name in ("temperature", "max_tokens", "api_base"):
            value = getattr(preset, name)
            if value is not None:
                options[name] = value
    if choice.thinking not in (None, "off"):
        options["reasoning_effort"] = choice.thinking
    return options


class LitellmModelCatalog:
    def __init__(self, settings: LlmSettings, default: LitellmChatModel | None = None) -> None:
        self._settings = settings
        self._models: dict[ModelChoice, LitellmChatModel] = {}
        if default is not None:
            self._models[ModelChoice()] = default
        self._counters: dict[str, LitellmTokenCounter] = {}

    def chat_model(self, choice: ModelChoice) -> LitellmChatModel:
        model = self._models.get(choice)
        if model is None:
            name = choice.preset.model if choice.preset else self._settings.llm_model
            model = LitellmChatModel(self._settings, name, options=call_options(choice))
            self._models[choice] = model
        return model

    def token_counter(self, choice: ModelChoice) -> LitellmTokenCounter:
        name = choice.preset.model if choice.preset else self._settings.llm_model
        counter = self._counters.get(name)
        if counter is None:
            counter = self._counters[name] = LitellmTokenCounter(name)
        return counter
