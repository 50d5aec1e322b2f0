"""litellm against an OpenAI-compatible server over real HTTP: a real tool-calling completion."""

from __future__ import annotations

import time

import pytest

from nanobot_lambda.adapters.llm.litellm_model import (
    LitellmChatModel,
    mark_system_prompt_for_caching,
    uses_prompt_cache_markers,
)
from nanobot_lambda.adapters.llm.transcription import transcriber_for
from nanobot_lambda.core.errors import ModelError
from nanobot_lambda.settings import AgentSettings, LlmSettings
from nanobot_lambda.tools.files import file_tools
from tests.support.fakes import MemoryWorkspace
from tests.support.scripted_model import ScriptedModelServer, Step
from tests.support.settings import AGENT_ENV

TOOLS = [tool.definition() for tool in file_tools(MemoryWorkspace())]


def model_for(server: ScriptedModelServer, **extra: str) -> LitellmChatModel:
    settings = LlmSettings.model_validate(
        {**server.env(api_key="sk-test-123"), "LLM_NUM_RETRIES": "0", **extra}
    )
    return LitellmChatModel(settings)


def test_tool_calling_completion(model_server: ScriptedModelServer) -> None:
    model_server.call_tool("write_file", {"path": "a.md", "content": "hi"}, content="Writing.")
    reply = model_for(model_server).complete([{"role": "user", "content": "save hi"}], TOOLS)
    assert reply.content == "Writing."
    (call,) = reply.tool_calls
    assert call.name == "write_file"
    assert call.arguments == '{"path": "a.md", "content": "hi"}'
    assert reply.usage.prompt_tokens == 100 and reply.usage.completion_tokens == 20
    request = model_server.requests[0]
    assert request["model"] == "scripted"
    assert [t["function"]["name"] for t in request["tools"]] == [
        "read_file",
        "write_file",
        "edit_file",
        "list_dir",
        "grep",
    ]
    assert model_server.headers[0]["Authorization"] == "Bearer sk-test-123"


def test_tool_results_round_trip(model_server: ScriptedModelServer) -> None:
    model_server.reply("Done.")
    messages = [
        {"role": "user", "content": "save hi"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_9",
                    "type": "function",
                    "function": {"name": "list_dir", "arguments": "{}"},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_9", "name": "list_dir", "content": "AGENTS.md"},
    ]
    reply = model_for(model_server).complete(messages, TOOLS)
    assert reply.content == "Done." and reply.tool_calls == ()
    sent = model_server.requests[0]["messages"]
    assert sent[1]["tool_calls"][0]["id"] == "call_9"
    assert sent[2]["tool_call_id"] == "call_9"


def test_settings_reach_the_request(model_server: ScriptedModelServer) -> None:
    model_server.reply("ok")
    model = model_for(model_server, LLM_TEMPERATURE="0.3", LLM_MAX_TOKENS="777")
    model.complete([{"role": "user", "content": "x"}], [])
    request = model_server.requests[0]
    assert request["temperature"] == 0.3
    assert request["max_tokens"] == 777
    assert "tools" not in request


def test_provider_failure_is_a_model_error_without_the_key(
    model_server: ScriptedModelServer,
) -> None:
    model_server.fail(500, times=3)
    with pytest.raises(ModelError) as error:
        model_for(model_server).complete([{"role": "user", "content": "x"}], TOOLS)
    assert "sk-test-123" not in str(error.value)
    assert "500" in str(error.value)


def test_provider_explanation_is_kept(
    model_server: ScriptedModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A missing key must be diagnosable from the error alone."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    settings = LlmSettings.model_validate(
        {
            "LLM_MODEL": "openai/scripted",
            "LLM_API_BASE": model_server.base_url,
            "LLM_NUM_RETRIES": "0",
        }
    )
    with pytest.raises(ModelError, match="api_key"):
        LitellmChatModel(settings).complete([{"role": "user", "content": "x"}], [])
    assert model_server.requests == []  # refused before any request


def test_retries_then_succeeds(model_server: ScriptedModelServer) -> None:
    model_server.fail(500).reply("recovered")
    model = model_for(model_server, LLM_NUM_RETRIES="2")
    assert model.complete([{"role": "user", "content": "x"}], []).content == "recovered"
    assert len(model_server.requests) == 2


def test_system_prompt_is_marked_for_caching_only_for_claude() -> None:
    messages = [{"role": "system", "content": "stable"}, {"role": "user", "content": "hi"}]
    marked = mark_system_prompt_for_caching(messages)
    assert marked[0]["content"] == [
        {"type": "text", "text": "stable", "cache_control": {"type": "ephemeral"}}
    ]
    assert marked[1] == messages[1] and messages[0]["content"] == "stable"
    for model in (
        "anthropic/claude-sonnet-4-5",
        "bedrock/anthropic.claude-3-5-sonnet",
        "openrouter/anthropic/claude-sonnet-4.5",
    ):
        assert uses_prompt_cache_markers(model)
    for model in ("openai/gpt-4o", "ollama_chat/llama3.2", "openrouter/openai/gpt-4o"):
        assert not uses_prompt_cache_markers(model)


def test_reasoning_content_is_read_from_the_reply(model_server: ScriptedModelServer) -> None:
    model_server.steps.append(
        Step(
            content=None,
            tool_calls=[
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "list_dir", "arguments": "{}"},
                }
            ],
            reasoning_content="I should look first.",
        )
    )
    reply = model_for(model_server).complete([{"role": "user", "content": "x"}], TOOLS)
    assert reply.reasoning_content == "I should look first."
    assert reply.tool_calls[0].name == "list_dir"


def test_a_fallback_model_answers_when_the_primary_keeps_failing(
    model_server: ScriptedModelServer,
) -> None:
    """Retries of LLM_MODEL are spent first, then the fallback (same provider: same key)."""
    model_server.fail(503, times=2).reply("from the fallback")
    model = model_for(model_server, LLM_NUM_RETRIES="1", LLM_FALLBACK_MODELS="openai/backup")
    reply = model.complete([{"role": "user", "content": "x"}], TOOLS)
    assert reply.content == "from the fallback"
    assert [request["model"] for request in model_server.requests] == [
        "scripted",
        "scripted",
        "backup",
    ]
    assert model_server.headers[-1]["Authorization"] == "Bearer sk-test-123"


def test_every_model_failing_is_one_model_error_naming_each(
    model_server: ScriptedModelServer,
) -> None:
    model_server.fail(429).fail(500)
    model = model_for(model_server, LLM_FALLBACK_MODELS="openai/backup")
    with pytest.raises(ModelError) as error:
        model.complete([{"role": "user", "content": "x"}], TOOLS)
    assert "openai/scripted" in str(error.value) and "openai/backup" in str(error.value)
    assert "sk-test-123" not in str(error.value)


def test_a_fallback_of_another_provider_gets_neither_our_key_nor_our_endpoint(
    model_server: ScriptedModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    model_server.fail(500)
    model = model_for(model_server, LLM_FALLBACK_MODELS="anthropic/claude-haiku-4-5")
    with pytest.raises(ModelError, match="anthropic/claude-haiku-4-5"):
        model.complete([{"role": "user", "content": "x"}], TOOLS)
    # Only the primary's request reached our endpoint; the fallback had no key to send.
    assert [request["model"] for request in model_server.requests] == ["scripted"]


def test_a_deadline_bounds_the_call(model_server: ScriptedModelServer) -> None:
    """agent_turn passes the time left in the invocation: a slow provider is cut off in time."""
    model_server.steps.append(Step(content="late", delay=5))
    started = time.monotonic()
    with pytest.raises(ModelError):
        model_for(model_server).complete([{"role": "user", "content": "x"}], TOOLS, timeout=1.0)
    assert time.monotonic() - started < 4


def test_a_failed_transcription_is_a_model_error_naming_its_kind_not_the_key(
    model_server: ScriptedModelServer,
) -> None:
    model_server.fail_transcription(500, times=3)
    settings = AgentSettings.model_validate(
        {
            **AGENT_ENV,
            "TRANSCRIPTION_MODEL": ScriptedModelServer.TRANSCRIPTION_MODEL,
            "TRANSCRIPTION_API_BASE": model_server.base_url,
            "TRANSCRIPTION_API_KEY": "sk-transcription-secret",
            "LLM_NUM_RETRIES": "0",
        }
    )
    transcriber = transcriber_for(settings)
    assert transcriber is not None
    with pytest.raises(ModelError) as error:
        transcriber.transcribe("voice.ogg", b"OggS" + bytes(64))
    assert str(error.value).startswith("transcription failed (")
    assert "sk-transcription-secret" not in str(error.value)
    assert error.value.__cause__ is None  # nothing of the provider's answer travels with it
