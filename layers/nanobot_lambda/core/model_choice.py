"""Which model answers a chat, and how hard it thinks: `/model` and `/think`.

The operator names presets (`MODEL_PRESETS`: a name such as `fast`, `smart` or `local` for a
litellm model and its options); a chat picks one with `/model NAME` and a thinking level with
`/think off|low|medium|high`. The choice is the chat's session's (`ChatPreferences`, kept in the
session header), so it lasts across turns and containers and each chat has its own. Who may
change it: the owner (`MODEL_SWITCHERS=owner`, the default) or anyone the chat is heard from
(`everyone`), since it changes what the chat costs.

A chat that chose nothing answers with LLM_MODEL at `LLM_THINKING` (unset: the provider's
default). A preset the operator removed since is forgotten quietly: the chat is back on the
default. Fallbacks, prices and spending limits follow the chosen model by construction: the
adapter builds the preset's model with LLM_MODEL and its fallbacks behind it, and a reply's
cost is priced from the model that gave it.

A change of model or thinking level starts the provider's prompt cache over (the cached prefix
belongs to one model and one request shape), so the answer says so.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

from nanobot_lambda.core import texts
from nanobot_lambda.core.sessions import ChatPreferences

if TYPE_CHECKING:
    from nanobot_lambda.core.ports import ChatModel, TokenCounter

THINKING_LEVELS = ("off", "low", "medium", "high")
Thinking = Literal["off", "low", "medium", "high"]
Switchers = Literal["owner", "everyone"]

PRESET_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,31}$")
DEFAULT_NAME = "default"  # `/model default`: back to LLM_MODEL
_PRESET_OPTIONS = ("reasoning_effort", "temperature", "max_tokens", "api_base", "description")


@dataclass(frozen=True)
class ModelPreset:
    """A model the operator offers by name. Its options are not secret: a preset of LLM_MODEL's
    provider reuses LLM_API_KEY, another provider reads its usual variable (as fallbacks do)."""

    name: str
    model: str
    reasoning_effort: Thinking | None = None  # the preset's own thinking level
    temperature: float | None = None
    max_tokens: int | None = None
    api_base: str | None = None
    description: str = ""


@dataclass(frozen=True)
class ModelChoice:
    """What one turn runs with: a preset (None: LLM_MODEL) at a thinking level (None: the
    provider's default)."""

    preset: ModelPreset | None = None
    thinking: Thinking | None = None


class ChatModels(Protocol):
    """The models a chat can be answered with (`adapters/llm/catalog.py`)."""

    def chat_model(self, choice: ModelChoice) -> ChatModel:
        """The model for `choice`, with LLM_MODEL and its fallbacks behind it."""
        ...

    def token_counter(self, choice: ModelChoice) -> TokenCounter:
        """Token counts and the context window of `choice`'s model."""
        ...


def parse_presets(value: str | Mapping[str, Any] | None) -> tuple[ModelPreset, ...]:
    """MODEL_PRESETS: a JSON object (`{"fast": "openai/gpt-4o-mini", "smart": {"model":
    "anthropic/claude-sonnet-4-5", "reasoning_effort": "medium"}}`) or the short form
    `fast=openai/gpt-4o-mini,smart=anthropic/claude-sonnet-4-5`. Raises ValueError saying what
    is wrong."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return ()
    if isinstance(value, str):
        text = value.strip()
        if text.startswith(("{", "[")):
            try:
                value = json.loads(text)
            except json.JSONDecodeError as error:
                raise ValueError(f"MODEL_PRESETS is not valid JSON: {error.msg}") from None
        else:
            value = dict(_short_form(text))
    if not isinstance(value, Mapping):
        raise ValueError("MODEL_PRESETS must be a JSON object of name → model")
    return tuple(_preset(str(name), spec) for name, spec in value.items())


def _short_form(text: str) -> Iterable[tuple[str, str]]:
    for entry in filter(None, (part.strip() for part in text.split(","))):
        name, equals, model = entry.partition("=")
        if not equals or not model.strip():
            raise ValueError(f"MODEL_PRESETS entry {entry!r} is not name=model")
        yield name.strip(), model.strip()


def _preset(name: str, spec: Any) -> ModelPreset:
    if not PRESET_NAME.match(name) or name == DEFAULT_NAME:
        raise ValueError(
            f"MODEL_PRESETS name {name!r}: use 1-32 of a-z, 0-9, _ and -, and not 'default'"
        )
    if isinstance(spec, str):
        spec = {"model": spec}
    if not isinstance(spec, Mapping) or not isinstance(spec.get("model"), str):
        raise ValueError(f"MODEL_PRESETS {name!r}: give a model name or {{'model': ...}}")
    unknown = set(spec) - {"model", *_PRESET_OPTIONS}
    if unknown:
        raise ValueError(f"MODEL_PRESETS {name!r}: unknown options {sorted(unknown)}")
    effort = spec.get("reasoning_effort")
    if effort is not None and effort not in THINKING_LEVELS:
        raise ValueError(f"MODEL_PRESETS {name!r}: reasoning_effort is one of {THINKING_LEVELS}")
    model = spec["model"].strip()
    if not model:
        raise ValueError(f"MODEL_PRESETS {name!r}: the model name is empty")
    return ModelPreset(
        name=name,
        model=model,
        reasoning_effort=effort,
        temperature=spec.get("temperature"),
        max_tokens=spec.get("max_tokens"),
        api_base=spec.get("api_base"),
        description=str(spec.get("description", "")),
    )


class ModelMenu:
    """The operator's presets and rules, applied to one chat's preferences."""

    def __init__(
        self,
        presets: Sequence[ModelPreset],
        *,
        default_model: str,
        default_thinking: Thinking | None = None,
        switchers: Switchers = "owner",
    ) -> None:
        self._presets = {preset.name: preset for preset in presets}
        self._default_model = default_model
        self._default_thinking = default_thinking
        self._switchers = switchers

    def choice(self, preferences: ChatPreferences) -> ModelChoice:
        preset = self._presets.get(preferences.model_preset or "")
        thinking = _level(preferences.thinking)
        if thinking is None:
            thinking = preset.reasoning_effort if preset else None
        return ModelChoice(preset, thinking or self._default_thinking)

    def may_change(self, person_id: int | None, owner: int | None) -> bool:
        return self._switchers == "everyone" or owner is None or person_id == owner

    def model_command(
        self, argument: str, preferences: ChatPreferences, *, allowed: bool
    ) -> tuple[str, ChatPreferences | None]:
        """`/model` (the list and the chat's current model) or `/model NAME`: the answer, and
        the preferences to save (None: nothing changes)."""
        name = argument.strip().lower()
        if not name:
            return self._listing(preferences, allowed), None
        if not allowed:
            return texts.load("model_not_allowed"), None
        if name == DEFAULT_NAME:
            chosen = ChatPreferences(None, preferences.thinking)
            label = self._default_model
        elif name in self._presets:
            chosen = ChatPreferences(name, preferences.thinking)
            label = self._presets[name].model
        else:
            names = ", ".join([DEFAULT_NAME, *self._presets])
            return texts.render("model_unknown", name=texts.literal(name), names=names), None
        if self.choice(chosen) == self.choice(preferences):
            return texts.render("model_unchanged", model=_code(label)), None
        return texts.render("model_switched", name=name, model=_code(label)), chosen

    def think_command(
        self, argument: str, preferences: ChatPreferences, *, allowed: bool
    ) -> tuple[str, ChatPreferences | None]:
        """`/think` (the chat's level) or `/think off|low|medium|high|default`."""
        level = argument.strip().lower()
        current = self.choice(preferences).thinking or "default"
        if not level:
            return texts.render("think_current", level=current), None
        if level != DEFAULT_NAME and level not in THINKING_LEVELS:
            return texts.render("think_usage", level=current), None
        if not allowed:
            return texts.load("model_not_allowed"), None
        chosen = ChatPreferences(preferences.model_preset, None if level == DEFAULT_NAME else level)
        if self.choice(chosen) == self.choice(preferences):
            return texts.render("think_unchanged", level=current), None
        return texts.render("think_set", level=self.choice(chosen).thinking or "default"), chosen

    def _listing(self, preferences: ChatPreferences, allowed: bool) -> str:
        current = self.choice(preferences)
        lines = [
            _menu_line(DEFAULT_NAME, self._default_model, "", current.preset is None),
            *(
                _menu_line(p.name, p.model, p.description, current.preset == p)
                for p in self._presets.values()
            ),
        ]
        key = "model_list" if allowed else "model_list_read_only"
        return texts.render(key, presets="\n".join(lines), thinking=current.thinking or "default")


def _menu_line(name: str, model: str, description: str, chosen: bool) -> str:
    mark = "▶︎" if chosen else "•"
    about = f": {texts.literal(description)}" if description else ""
    return f"{mark} `{name}`: `{_code(model)}`{about}"


def _code(model: str) -> str:
    """A model name, as the operator wrote it, for a code span (which cannot hold a backtick)."""
    return model.replace("`", "'")


def _level(value: str | None) -> Thinking | None:
    return value if value in THINKING_LEVELS else None  # type: ignore[return-value]


class ModelOptions:
    """The model each choice answers with: a pure function of the operator's menu and a chat's
    choice (the job's context carries the choice, tools/context.py). The default choice, or no
    catalog (the unit tests' fakes), answers with `default`."""

    def __init__(
        self,
        models: ChatModels | None,
        default: ChatModel,
        default_tokens: TokenCounter,
        *,
        default_window: int | None = None,  # CONTEXT_WINDOW_TOKENS: LLM_MODEL's, if set
        reply_tokens: int,  # LLM_MAX_TOKENS: room kept for the reply
    ) -> None:
        self._models = models
        self._default = default
        self._default_tokens = default_tokens
        self._default_window = default_window
        self._reply_tokens = reply_tokens

    def model(self, choice: ModelChoice) -> ChatModel:
        """The model that answers `choice`."""
        if self._models is None or choice == ModelChoice():
            return self._default
        return self._models.chat_model(choice)

    def tokens(self, choice: ModelChoice) -> TokenCounter:
        """Token counts for `choice`'s model."""
        if self._models is None or choice.preset is None:
            return self._default_tokens
        return self._models.token_counter(choice)

    def context_window(self, choice: ModelChoice) -> int:
        if choice.preset is None or self._models is None:
            return self._default_window or self._default_tokens.context_window
        return self.tokens(choice).context_window

    def request_budget(self, choice: ModelChoice) -> int:
        """The most input tokens a request to the chosen model may have: its window, less room
        for the reply and a margin for tokenizers that count a little differently."""
        window = self.context_window(choice)
        preset = choice.preset
        reply = preset.max_tokens if preset and preset.max_tokens else self._reply_tokens
        return max(window // 2, int(window * 0.95) - reply)
