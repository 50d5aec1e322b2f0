"""Models: the operator's presets (MODEL_PRESETS), and each chat's choice and thinking level
(`/model`, `/think`), which the owner, or with MODEL_SWITCHERS=everyone the chat's own person,
may change.

A change is `/model NAME` or `/think LEVEL`'s own (core/model_choice.py: `ModelMenu`), saved
with the chat's session as the command saves it, so the chat's next turn answers with it.
"""

from __future__ import annotations

from typing import Any

from nanobot_lambda.core.model_choice import (
    DEFAULT_NAME,
    THINKING_LEVELS,
    ModelMenu,
    ModelPreset,
)
from nanobot_lambda.core.sessions import session_key_for
from nanobot_lambda.functions.console.auth import ChatScope, Viewer
from nanobot_lambda.functions.console.ports import ConsoleError, ConsolePorts
from nanobot_lambda.functions.console.requests import plain, text_field


class ModelViews:
    def __init__(
        self,
        ports: ConsolePorts,
        menu: ModelMenu,
        presets: tuple[ModelPreset, ...],
        *,
        default_model: str | None,
        default_thinking: str | None,
        owner: int | None,
    ) -> None:
        self._ports = ports
        self._menu = menu
        self._presets = presets
        self._default_model = default_model
        self._default_thinking = default_thinking
        self._owner = owner

    def models(self, target: ChatScope, body: dict[str, Any], viewer: Viewer) -> dict[str, Any]:
        preferences = self._ports.sessions.load(session_key_for(target.chat_id), 0).preferences
        choice = self._menu.choice(preferences)
        return {
            "default_model": self._default_model,
            "default_thinking": self._default_thinking,
            "presets": [
                {
                    "name": preset.name,
                    "model": preset.model,
                    "description": preset.description,
                    "reasoning_effort": preset.reasoning_effort,
                }
                for preset in self._presets
            ],
            "chat": {
                "chat_id": target.chat_id,
                "preset": choice.preset.name if choice.preset else None,
                "thinking": choice.thinking,
                "may_change": self._menu.may_change(viewer.user_id, self._owner),
            },
        }

    def choose(self, target: ChatScope, body: dict[str, Any], viewer: Viewer) -> dict[str, Any]:
        key = session_key_for(target.chat_id)
        preferences = self._ports.sessions.load(key, 0).preferences
        allowed = self._menu.may_change(viewer.user_id, self._owner)
        if not allowed:
            raise ConsoleError(403, "only the owner may change the model (MODEL_SWITCHERS)")
        if "preset" in body:
            name = text_field(body, "preset", 40).strip().lower()
            if name != DEFAULT_NAME and name not in {preset.name for preset in self._presets}:
                raise ConsoleError(400, f"no preset {name}")
            answer, chosen = self._menu.model_command(name, preferences, allowed=allowed)
        else:
            level = text_field(body, "thinking", 20).strip().lower()
            if level != DEFAULT_NAME and level not in THINKING_LEVELS:
                raise ConsoleError(400, "thinking is off, low, medium, high or default")
            answer, chosen = self._menu.think_command(level, preferences, allowed=allowed)
        if chosen is not None:
            self._ports.sessions.set_preferences(key, chosen)
        return {"message": plain(answer), **self.models(target, {}, viewer)["chat"]}
