"""/model and /think: the operator's presets, who may switch, what a chat's choice resolves to."""

from __future__ import annotations

import pytest

from nanobot_lambda.adapters.llm.catalog import call_options
from nanobot_lambda.core.model_choice import (
    ModelChoice,
    ModelMenu,
    ModelPreset,
    parse_presets,
)
from nanobot_lambda.core.sessions import ChatPreferences

PRESETS = parse_presets(
    '{"fast": "openai/gpt-4o-mini",'
    ' "smart": {"model": "anthropic/claude-sonnet-4-5", "reasoning_effort": "medium",'
    ' "description": "for hard questions"},'
    ' "local": {"model": "ollama_chat/llama3", "api_base": "http://10.0.0.5:11434",'
    ' "temperature": 0.2}}'
)
OWNER = 100
NOBODY = ChatPreferences()


def menu(**options: object) -> ModelMenu:
    return ModelMenu(PRESETS, default_model="openai/gpt-4o", **options)  # type: ignore[arg-type]


def test_presets_parse_from_json_and_from_the_short_form() -> None:
    assert [p.name for p in PRESETS] == ["fast", "smart", "local"]
    assert PRESETS[1].reasoning_effort == "medium" and PRESETS[2].temperature == 0.2
    short = parse_presets("fast=openai/gpt-4o-mini, local = ollama_chat/llama3")
    assert [(p.name, p.model) for p in short] == [
        ("fast", "openai/gpt-4o-mini"),
        ("local", "ollama_chat/llama3"),
    ]
    assert parse_presets("") == () and parse_presets(None) == ()


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("{not json", "not valid JSON"),
        ("fast", "not name=model"),
        ('{"Fast Model": "x/y"}', "use 1-32 of a-z"),
        ('{"default": "x/y"}', "not 'default'"),
        ('{"fast": {"model": "x/y", "api_key": "sk-1"}}', "unknown options"),
        ('{"fast": {"model": "x/y", "reasoning_effort": "max"}}', "reasoning_effort is one of"),
        ('{"fast": 3}', "give a model name"),
        ("[1]", "must be a JSON object"),
    ],
)
def test_a_bad_preset_setting_says_what_is_wrong(value: str, says: str) -> None:
    with pytest.raises(ValueError, match=says):
        parse_presets(value)


def test_a_chat_that_chose_nothing_runs_the_default_at_the_default_thinking() -> None:
    assert menu().choice(NOBODY) == ModelChoice(None, None)
    assert menu(default_thinking="low").choice(NOBODY) == ModelChoice(None, "low")


def test_a_preset_brings_its_thinking_and_the_chat_s_own_level_wins() -> None:
    smart = menu().choice(ChatPreferences("smart"))
    assert smart.preset is not None and smart.preset.model == "anthropic/claude-sonnet-4-5"
    assert smart.thinking == "medium"
    assert menu().choice(ChatPreferences("smart", "off")).thinking == "off"


def test_a_preset_the_operator_removed_is_back_on_the_default() -> None:
    assert menu().choice(ChatPreferences("gone", "high")) == ModelChoice(None, "high")


def test_model_lists_the_presets_and_marks_the_chat_s() -> None:
    answer, saved = menu().model_command("", ChatPreferences("fast"), allowed=True)
    assert saved is None
    assert "▶︎ `fast`: `openai/gpt-4o-mini`" in answer
    assert "• `default`: `openai/gpt-4o`" in answer
    assert "for hard questions" in answer and "/model NAME" in answer


def test_model_switches_and_says_the_cache_starts_over() -> None:
    answer, saved = menu().model_command("Smart", ChatPreferences(None, "high"), allowed=True)
    assert saved == ChatPreferences("smart", "high")  # the chat's thinking level is kept
    assert "`anthropic/claude-sonnet-4-5`" in answer and "cache starts over" in answer
    answer, saved = menu().model_command("default", ChatPreferences("smart"), allowed=True)
    assert saved == ChatPreferences(None, None) and "`openai/gpt-4o`" in answer


def test_model_unknown_or_unchanged_saves_nothing() -> None:
    answer, saved = menu().model_command("[evil](http://x.example)", NOBODY, allowed=True)
    assert saved is None and "default, fast, smart, local" in answer
    assert "](http" not in answer  # the name the person typed is shown as text only
    answer, saved = menu().model_command("fast", ChatPreferences("fast"), allowed=True)
    assert saved is None and "already" in answer


def test_only_those_allowed_may_switch_but_anyone_may_look() -> None:
    answer, saved = menu().model_command("fast", NOBODY, allowed=False)
    assert saved is None and "Only the owner" in answer
    answer, saved = menu().think_command("high", NOBODY, allowed=False)
    assert saved is None and "Only the owner" in answer
    answer, _ = menu().model_command("", NOBODY, allowed=False)
    assert "Only the owner can switch" in answer
    assert menu().may_change(OWNER, OWNER) and not menu().may_change(7, OWNER)
    assert menu(switchers="everyone").may_change(7, OWNER)


def test_think_sets_shows_and_resets_the_level() -> None:
    answer, saved = menu().think_command("HIGH", NOBODY, allowed=True)
    assert saved == ChatPreferences(None, "high") and "high" in answer
    answer, saved = menu().think_command("", ChatPreferences(None, "low"), allowed=True)
    assert saved is None and "low" in answer
    answer, saved = menu().think_command("lots", NOBODY, allowed=True)
    assert saved is None and "/think off, low, medium or high" in answer
    answer, saved = menu().think_command("default", ChatPreferences("fast", "high"), allowed=True)
    assert saved == ChatPreferences("fast", None)


def test_a_choice_becomes_the_model_call_s_options() -> None:
    local = next(p for p in PRESETS if p.name == "local")
    assert call_options(ModelChoice(local, "off")) == {
        "temperature": 0.2,
        "api_base": "http://10.0.0.5:11434",
    }
    assert call_options(ModelChoice(None, "high")) == {"reasoning_effort": "high"}
    assert call_options(ModelChoice()) == {}
    assert ModelChoice(ModelPreset("a", "b/c")) == ModelChoice(ModelPreset("a", "b/c"))
