"""/model and /think in the turn: the chat's choice answers its next turns, is kept with its
session, is the owner's to make (by default), and never leaks into another chat's job."""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field

from nanobot_lambda.core.model_choice import ModelChoice
from nanobot_lambda.core.sessions import ChatPreferences
from tests.support.fakes import ApproxTokenCounter, ScriptedModel, text
from tests.unit.test_turns import ADA, SESSION, Bot, message

BEA = 222222222
PRESETS = json.dumps(
    {"fast": "openai/gpt-4o-mini", "smart": {"model": "anthropic/claude-x", "description": "x"}}
)


@dataclass
class Catalog:
    """The models a chat may choose: a scripted model per preset, and the choices asked for."""

    models: dict[str | None, ScriptedModel]
    asked: list[ModelChoice] = field(default_factory=list)

    def chat_model(self, choice: ModelChoice) -> ScriptedModel:
        self.asked.append(choice)
        return self.models[choice.preset.name if choice.preset else None]

    def token_counter(self, choice: ModelChoice) -> ApproxTokenCounter:
        return ApproxTokenCounter()


def bot(**settings: str) -> tuple[Bot, Catalog]:
    catalog = Catalog({None: ScriptedModel(), "fast": ScriptedModel(), "smart": ScriptedModel()})
    made = Bot(
        ScriptedModel(),
        models=catalog,
        settings={"MODEL_PRESETS": PRESETS, "ALLOW_FROM": f"{ADA},{BEA}", **settings},
    )
    return made, catalog


def from_bea(words: str, update_id: int) -> object:
    job = message(words, update_id)
    update = copy.deepcopy(job.update)
    update["message"]["from"]["id"] = update["message"]["chat"]["id"] = BEA
    return type(job)(update=update)


def test_model_lists_the_presets_and_switching_answers_the_next_turn_with_it() -> None:
    chat, catalog = bot()
    chat.process(message("/model", 1))
    assert "• fast: openai/gpt-4o-mini" in chat.said[-1]  # as the chat shows it
    assert "▶︎ default: " in chat.said[-1] and "• smart: anthropic/claude-x" in chat.said[-1]

    chat.process(message("/model smart", 2))
    assert "answered by smart (anthropic/claude-x)" in chat.said[-1]
    assert "cache starts over" in chat.said[-1]
    assert chat.sessions.preferences[SESSION] == ChatPreferences("smart", None)

    catalog.models["smart"].replies.append(text("Thought it through."))
    chat.process(message("what is 2+2?", 3))
    assert chat.said[-1] == "Thought it through."
    assert chat.model.requests == []  # LLM_MODEL was not asked
    assert [c.preset.name if c.preset else None for c in catalog.asked] == ["smart"]


def test_think_sets_the_level_the_next_turn_is_asked_with() -> None:
    chat, catalog = bot(LLM_THINKING="low")
    chat.process(message("/think", 1))
    assert "Thinking in this chat: low" in chat.said[-1]
    chat.process(message("/think high", 2))
    catalog.models[None].replies.append(text("Deep answer."))
    chat.process(message("why is the sky blue?", 3))
    assert chat.said[-1] == "Deep answer."
    assert catalog.asked == [ModelChoice(None, "high")]


def test_only_the_owner_switches_and_each_chat_keeps_its_own() -> None:
    chat, catalog = bot()
    chat.process(from_bea("/model smart", 10))
    assert "Only the owner" in chat.said[-1]
    assert f"telegram:{BEA}" not in chat.sessions.preferences

    chat.process(message("/model fast", 11))  # the owner's chat
    chat.model.replies.append(text("Default answers Bea."))
    chat.process(from_bea("hello", 12))  # after the owner's switch, in another chat
    assert chat.said[-1] == "Default answers Bea."
    assert catalog.asked == []  # Bea's chat never left LLM_MODEL


def test_anyone_heard_may_switch_when_the_operator_says_so() -> None:
    chat, _ = bot(MODEL_SWITCHERS="everyone")
    chat.process(from_bea("/model fast", 20))
    assert chat.sessions.preferences[f"telegram:{BEA}"] == ChatPreferences("fast", None)


def test_help_and_the_menu_list_model_and_think() -> None:
    chat, _ = bot()
    chat.process(message("/help", 30))
    assert "/model" in chat.said[-1] and "/think" in chat.said[-1]
