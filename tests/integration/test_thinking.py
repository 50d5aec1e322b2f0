"""Thinking models through the real adapter, per provider, whole and streamed: how hard a model
thinks (`reasoning_effort`) in each provider's own words, and a tool loop across steps and
turns in which the thinking goes back as the provider requires (Anthropic's and Bedrock's
thinking blocks with their signatures, Gemini's thought signatures; vLLM takes none back) and
never reaches the user or the session.

The stand-ins refuse what their provider refuses (a thinking block changed or missing from the
tool step it continues, thinking with a forced tool, a max_tokens not above the thinking
budget): the `provider` fixture fails a test that sent such a request.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from nanobot_lambda.adapters.llm.litellm_model import LitellmChatModel
from nanobot_lambda.core.agent import AgentLoop, for_saving
from nanobot_lambda.core.consolidation import SAVE_MEMORY, SAVE_MEMORY_TOOL
from nanobot_lambda.core.model import CompletionRequest, ModelReply, force_tool
from nanobot_lambda.core.tools import ToolRegistry
from nanobot_lambda.settings import LlmSettings
from nanobot_lambda.tools.files import file_tools
from tests.support.fakes import MemoryWorkspace
from tests.support.job_context import job_context
from tests.support.provider_servers import Answer, Thought
from tests.support.providers import Provider

STREAMED = [pytest.param(False, id="whole"), pytest.param(True, id="streamed")]
THINKING = ["anthropic", "bedrock", "gemini", "local", "compatible"]  # shows its thinking
SYSTEM = {"role": "system", "content": "You are terse."}
NOTE = "hi from the note"


def model_of(provider: Provider, model: str | None = None, **env: str) -> LitellmChatModel:
    settings = {**provider.env(model or provider.reasoning_model), "LLM_NUM_RETRIES": "0", **env}
    return LitellmChatModel(LlmSettings.model_validate(settings))


class Thinking:
    """A ChatModel asking every call for `effort`, as the turn does for a chat's /think."""

    def __init__(self, model: LitellmChatModel, effort: str) -> None:
        self._model = model
        self._effort = effort

    def complete(self, request: CompletionRequest) -> ModelReply:
        return self._model.complete(replace(request, reasoning_effort=self._effort))


# -- how hard it thinks, in each provider's words ----------------------------------------------


def asked(provider: Provider, effort: str | None, model: str | None = None) -> dict[str, Any]:
    """The request body of one call with `effort`."""
    provider.script(Answer(text="ok"))
    before = len(provider.requests)
    model_of(provider, model).complete(
        CompletionRequest([{"role": "user", "content": "Hi?"}], [], reasoning_effort=effort)
    )
    return provider.requests[before]


@pytest.mark.parametrize("provider", ["anthropic"], indirect=True)
def test_anthropic_thinks_within_a_budget_on_top_of_the_answers_tokens(provider: Provider) -> None:
    anthropic = provider
    high = asked(anthropic, "high")
    assert high["thinking"] == {"type": "enabled", "budget_tokens": 4096}
    assert high["max_tokens"] == 4096 + 4096  # LLM_MAX_TOKENS stays the answer's
    assert asked(anthropic, "low")["thinking"] == {"type": "enabled", "budget_tokens": 1024}
    for effort in ("off", None):
        body = asked(anthropic, effort)
        assert "thinking" not in body and body["max_tokens"] == 4096
    assert anthropic.refusals() == []


@pytest.mark.parametrize("provider", ["bedrock"], indirect=True)
def test_bedrock_claude_thinks_as_anthropic(provider: Provider) -> None:
    bedrock = provider
    medium = asked(bedrock, "medium")
    assert medium["additionalModelRequestFields"]["thinking"] == {
        "type": "enabled",
        "budget_tokens": 2048,
    }
    assert medium["inferenceConfig"]["maxTokens"] == 4096 + 2048
    for effort in ("off", None):
        assert "thinking" not in (asked(bedrock, effort).get("additionalModelRequestFields") or {})
    assert bedrock.refusals() == []


@pytest.mark.parametrize("provider", ["gemini"], indirect=True)
def test_gemini_thinks_within_a_budget_and_off_is_none(provider: Provider) -> None:
    gemini = provider
    config = asked(gemini, "low")["generationConfig"]
    assert config["thinkingConfig"] == {"thinkingBudget": 1024, "includeThoughts": True}
    off = asked(gemini, "off")["generationConfig"]["thinkingConfig"]
    assert off == {"thinkingBudget": 0, "includeThoughts": False}
    # 2.5 Pro refuses a budget of 0: "off" is the least it takes.
    pro = asked(gemini, "off", "gemini/gemini-2.5-pro")["generationConfig"]["thinkingConfig"]
    assert pro["thinkingBudget"] > 0
    assert "thinkingConfig" not in asked(gemini, None)["generationConfig"]


@pytest.mark.parametrize(
    ("model", "off"),
    [
        ("openai/gpt-5.1", "none"),  # can stop thinking
        ("openai/gpt-5", "minimal"),  # the least it allows
        ("openai/o4-mini", "low"),
    ],
)
@pytest.mark.parametrize("provider", ["openai"], indirect=True)
def test_openai_reasoning_effort_and_what_off_is_per_model(
    provider: Provider, model: str, off: str
) -> None:
    openai = provider
    assert asked(openai, "high", model)["reasoning_effort"] == "high"
    assert asked(openai, "off", model)["reasoning_effort"] == off
    assert "reasoning_effort" not in asked(openai, None, model)


@pytest.mark.parametrize("provider", ["openai"], indirect=True)
def test_a_model_that_does_not_reason_is_not_asked_to(provider: Provider) -> None:
    openai = provider
    for effort in ("off", "high"):
        assert "reasoning_effort" not in asked(openai, effort, "openai/gpt-4o-mini")


@pytest.mark.parametrize("provider", ["local"], indirect=True)
def test_a_local_model_gets_the_effort_asked_but_nothing_for_off(provider: Provider) -> None:
    local = provider
    assert asked(local, "medium")["reasoning_effort"] == "medium"
    assert "reasoning_effort" not in asked(local, "off")


@pytest.mark.parametrize("provider", ["anthropic"], indirect=True)
def test_an_unknown_effort_is_refused_before_any_request(provider: Provider) -> None:
    anthropic = provider
    with pytest.raises(ValueError, match="off, low, medium, high"):
        model_of(anthropic).complete(
            CompletionRequest([{"role": "user", "content": "Hi?"}], [], reasoning_effort="max")
        )
    assert anthropic.requests == []


@pytest.mark.parametrize("streamed", STREAMED)
def test_a_forced_tool_is_asked_without_thinking_where_the_provider_refuses_both(
    provider: Provider, streamed: bool
) -> None:
    """Consolidation forces its tool; Claude (Anthropic, Bedrock) refuses that with thinking."""
    arguments = {"history_entry": "[2026-11-26 09:00] Talked.", "memory_update": "# Memory"}
    provider.script(Answer(text=None, tool_calls=[(SAVE_MEMORY, arguments)]))
    reply = model_of(provider).complete(
        CompletionRequest(
            [SYSTEM, {"role": "user", "content": "Hi?"}],
            [SAVE_MEMORY_TOOL],
            tool_choice=force_tool(SAVE_MEMORY),
            on_text=(lambda text: None) if streamed else None,
            reasoning_effort="high",
        ),
    )
    call = reply.call_to(SAVE_MEMORY)
    assert call is not None and call.json_object() == arguments
    assert provider.forced_tool(provider.requests[0]) == SAVE_MEMORY


@pytest.mark.parametrize("provider", ["anthropic"], indirect=True)
def test_claude_thinking_drops_a_temperature_it_refuses(provider: Provider) -> None:
    anthropic = provider
    anthropic.script(Answer(text="ok"), Answer(text="ok"))
    model = model_of(anthropic, LLM_TEMPERATURE="0.2")
    model.complete(
        CompletionRequest([{"role": "user", "content": "Hi?"}], [], reasoning_effort="low")
    )
    model.complete(CompletionRequest([{"role": "user", "content": "Hi?"}], []))
    thinking, plain = anthropic.requests
    assert "temperature" not in thinking and plain["temperature"] == 0.2


# -- a thinking model's tool loop, across steps and turns ----------------------------------------


def step(thought: str, signature: str) -> Answer:
    return Answer(
        text=None,
        thinking=[Thought(thought, signature)],
        tool_calls=[("read_file", {"path": "notes.md"})],
    )


def answer(text: str, thought: str, signature: str) -> Answer:
    return Answer(text=text, thinking=[Thought(thought, signature)])


def expected_thinking(provider: Provider, thought: str, signature: str) -> list[tuple[str, str]]:
    """How `thought` goes back to `provider`: Gemini takes only the signature; vLLM nothing
    (litellm leaves reasoning_content out for it: vLLM reads none); another OpenAI-compatible
    server the text (reasoning_content, as DeepSeek's)."""
    if provider.name == "gemini":
        return [("", signature)]
    if provider.name == "local":
        return []
    if provider.name == "compatible":
        return [(thought, "")]
    return [(thought, signature)]


@pytest.mark.parametrize("provider", THINKING, indirect=True)
@pytest.mark.parametrize("streamed", STREAMED)
def test_a_thinking_tool_loop_across_steps_and_turns(provider: Provider, streamed: bool) -> None:
    thinker = provider
    thoughts = ["PRIVATE-1 read the note first", "PRIVATE-2 now say it", "PRIVATE-3 again"]
    thinker.script(
        step(thoughts[0], "sig-step-1"),
        answer("The note says hi.", thoughts[1], "sig-answer-1"),
        step(thoughts[2], "sig-step-2"),
        answer("Still hi.", thoughts[1], "sig-answer-2"),
    )
    workspace = MemoryWorkspace({"notes.md": NOTE})
    loop = AgentLoop(Thinking(model_of(thinker), "high"), ToolRegistry(file_tools()), 4)
    shown: list[str] = []
    on_text = shown.append if streamed else None

    first_user = {"role": "user", "content": "What does the note say?"}
    first = loop.run(job_context(workspace), [SYSTEM, first_user], on_text=on_text)
    assert first.reply == "The note says hi." and first.iterations == 2
    continued = thinker.requests[1]  # the tool step's results, with its thinking
    assert thinker.thinking_sent(continued) == expected_thinking(thinker, thoughts[0], "sig-step-1")
    assert NOTE in json.dumps(continued)

    saved = [for_saving(message) for message in first.new_messages]
    assert all("thinking_blocks" not in m and "reasoning_content" not in m for m in saved)
    second_user = {"role": "user", "content": "And now?"}
    second = loop.run(
        job_context(workspace), [SYSTEM, first_user, *saved, second_user], on_text=on_text
    )
    assert second.reply == "Still hi."
    sent = thinker.thinking_sent(thinker.requests[3])
    assert sent[-1:] == expected_thinking(thinker, thoughts[2], "sig-step-2")
    assert not any(thoughts[0] in text for text, _ in sent)  # not kept in the session
    assert len(thinker.requests) == 4

    seen_by_user = [first.reply, second.reply, *shown, *(json.dumps(m) for m in saved)]
    for thought in thoughts:
        assert not any(thought in text for text in seen_by_user)
    if streamed:
        assert shown and shown[-1] == "Still hi."


@pytest.mark.parametrize("provider", ["openai"], indirect=True)
@pytest.mark.parametrize("streamed", STREAMED)
def test_an_openai_reasoning_models_tool_loop_thinks_at_each_step(
    provider: Provider, streamed: bool
) -> None:
    """OpenAI keeps its reasoning to itself in chat completions: nothing goes back, and each
    step is asked for the same effort, within the answer's tokens plus the thinking budget."""
    provider.script(
        Answer(text=None, tool_calls=[("read_file", {"path": "notes.md"})]),
        Answer(text="The note says hi."),
    )
    workspace = MemoryWorkspace({"notes.md": NOTE})
    loop = AgentLoop(Thinking(model_of(provider), "high"), ToolRegistry(file_tools()), 4)
    outcome = loop.run(
        job_context(workspace),
        [SYSTEM, {"role": "user", "content": "What does the note say?"}],
        on_text=(lambda text: None) if streamed else None,
    )
    assert outcome.reply == "The note says hi."
    for body in provider.requests:
        assert body["model"] == "o4-mini" and body["reasoning_effort"] == "high"
        assert body["max_completion_tokens"] == 4096 + 4096
    assert NOTE in json.dumps(provider.requests[1])


@pytest.mark.parametrize("provider", ["anthropic"], indirect=True)
@pytest.mark.parametrize("streamed", STREAMED)
def test_redacted_thinking_goes_back_with_the_thinking_in_its_place(
    provider: Provider, streamed: bool
) -> None:
    """Anthropic encrypts some thinking (redacted_thinking): it goes back as it came, in order."""
    thinking = step("PRIVATE read first", "sig-a")
    thinking.redacted = ["EncryptedThinkingData=="]
    provider.script(thinking, Answer(text="Done."))
    workspace = MemoryWorkspace({"notes.md": NOTE})
    loop = AgentLoop(Thinking(model_of(provider), "low"), ToolRegistry(file_tools()), 4)
    outcome = loop.run(
        job_context(workspace),
        [SYSTEM, {"role": "user", "content": "Read it."}],
        on_text=(lambda text: None) if streamed else None,
    )
    assert outcome.reply == "Done."
    step_sent = provider.requests[1]["messages"][-2]
    assert [block["type"] for block in step_sent["content"]] == [
        "thinking",
        "redacted_thinking",
        "tool_use",
    ]
    assert step_sent["content"][1]["data"] == "EncryptedThinkingData=="


@pytest.mark.parametrize("provider", ["anthropic", "gemini"], indirect=True)
def test_a_chats_think_choice_is_asked_as_a_calls(provider: Provider) -> None:
    """/think reaches the model as its own option (adapters/llm/catalog.py): the same words per
    provider as a call's reasoning_effort; a call's own effort goes first."""
    settings = LlmSettings.model_validate({**provider.env(), "LLM_NUM_RETRIES": "0"})
    chosen = {
        effort: LitellmChatModel(settings, provider.model, options={"reasoning_effort": effort})
        for effort in ("high", "off")
    }
    provider.script(*(Answer(text="ok") for _ in range(3)))
    for model in (chosen["high"], chosen["off"]):
        model.complete(CompletionRequest([{"role": "user", "content": "Hi?"}], []))
    chosen["off"].complete(
        CompletionRequest([{"role": "user", "content": "Hi?"}], [], reasoning_effort="low")
    )
    high, off, low = provider.requests
    if provider.name == "anthropic":
        assert high["thinking"]["budget_tokens"] == 4096 and high["max_tokens"] == 8192
        assert "thinking" not in off
        assert low["thinking"]["budget_tokens"] == 1024
    else:  # Gemini 2.5 Flash thinks unless told not to: "off" tells it
        assert high["generationConfig"]["thinkingConfig"]["thinkingBudget"] == 4096
        assert off["generationConfig"]["thinkingConfig"]["thinkingBudget"] == 0
        assert low["generationConfig"]["thinkingConfig"]["thinkingBudget"] == 1024
