"""`ChatModels` on litellm: the model each chat's /model and /think choice asks for.

One `LitellmChatModel` and one `LitellmTokenCounter` per distinct choice, made on first use and
kept for the container's life (they hold no connection: litellm's clients are its own).
A preset is called with its own options (temperature, max_tokens, api_base) and the thinking level,
which the adapter asks of each provider in its own words (`reasoning_options` in
litellm_model/reasoning.py: "off" is no thinking where the model allows it, Gemini 2.5 Flash
included, which thinks unless told not to; else the least it allows); LLM_MODEL and its fallbacks
stand behind it unchanged, so a chat on a failing preset is still answered.
"""

from __future__ import annotations

from typing import Any

from nanobot_lambda.adapters.llm.litellm_model import LitellmChatModel, provider_of
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
    if choice.thinking is not None:
        options["reasoning_effort"] = choice.thinking
    return options


def served_at(settings: LlmSettings, choice: ModelChoice | None = None) -> dict[str, str]:
    """Where a choice's model is served and with which key, as its calls reach it (litellm_model:
    LLM_API_BASE and LLM_API_KEY for models of LLM_MODEL's provider, a preset's own `api_base`
    before them): for the token counter to ask the server its window."""
    preset = choice.preset if choice else None
    model = preset.model if preset else settings.llm_model
    where: dict[str, str] = {}
    if provider_of(model) == provider_of(settings.llm_model):
        if settings.llm_api_base:
            where["api_base"] = settings.llm_api_base
        if settings.llm_api_key is not None:
            where["api_key"] = settings.llm_api_key.get_secret_value()
    if preset is not None and preset.api_base:
        where["api_base"] = preset.api_base
    return where


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
            counter = LitellmTokenCounter(name, **served_at(self._settings, choice))
            self._counters[name] = counter
        return counter
