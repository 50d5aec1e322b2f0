"""litellm against an OpenAI-compatible server over real HTTP: a real tool-calling completion."""

from __future__ import annotations

import itertools
import time

import pytest

from nanobot_lambda.adapters.llm.litellm_model import LitellmChatModel
from nanobot_lambda.adapters.llm.litellm_model.prompt_cache import (
    mark_cache_breakpoints,
    uses_prompt_cache_markers,
)
from nanobot_lambda.adapters.llm.transcription import transcriber_for
from nanobot_lambda.core.errors import ModelError
from nanobot_lambda.core.model import CompletionRequest
from nanobot_lambda.settings import AgentSettings, LlmSettings
from nanobot_lambda.tools.files import file_tools
from tests.support.scripted_model import ScriptedModelServer, Step
from tests.support.settings import AGENT_ENV

TOOLS = [tool.definition() for tool in file_tools()]


def model_for(server: ScriptedModelServer, **extra: str) -> LitellmChatModel:
    settings = LlmSettings.model_validate(
        {**server.env(api_key="sk-test-123"), "LLM_NUM_RETRIES": "0", **extra}
    )
    return LitellmChatModel(settings)


def test_tool_calling_completion(model_server: ScriptedModelServer) -> None:
    model_server.call_tool("write_file", {"path": "a.md", "content": "hi"}, content="Writing.")
    reply = model_for(model_server).complete(
        CompletionRequest([{"role": "user", "content": "save hi"}], TOOLS)
    )
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
    reply = model_for(model_server).complete(CompletionRequest(messages, TOOLS))
    assert reply.content == "Done." and reply.tool_calls == ()
    sent = model_server.requests[0]["messages"]
    assert sent[1]["tool_calls"][0]["id"] == "call_9"
    assert sent[2]["tool_call_id"] == "call_9"


def test_settings_reach_the_request(model_server: ScriptedModelServer) -> None:
    model_server.reply("ok")
    model = model_for(model_server, LLM_TEMPERATURE="0.3", LLM_MAX_TOKENS="777")
    model.complete(CompletionRequest([{"role": "user", "content": "x"}], []))
    request = model_server.requests[0]
    assert request["temperature"] == 0.3
    assert request["max_tokens"] == 777
    assert "tools" not in request


def test_provider_failure_is_a_model_error_without_the_key(
    model_server: ScriptedModelServer,
) -> None:
    model_server.fail(500, times=3)
    with pytest.raises(ModelError) as error:
        model_for(model_server).complete(
            CompletionRequest([{"role": "user", "content": "x"}], TOOLS)
        )
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
        LitellmChatModel(settings).complete(
            CompletionRequest([{"role": "user", "content": "x"}], [])
        )
    assert model_server.requests == []  # refused before any request


def test_retries_then_succeeds(model_server: ScriptedModelServer) -> None:
    model_server.fail(500).reply("recovered")
    model = model_for(model_server, LLM_NUM_RETRIES="2")
    assert (
        model.complete(CompletionRequest([{"role": "user", "content": "x"}], [])).content
        == "recovered"
    )
    assert len(model_server.requests) == 2


def test_spent_retries_report_the_providers_error(model_server: ScriptedModelServer) -> None:
    """What the operator reads in the log names the provider's failure (litellm's own retry
    wrapper would turn it into "tenacity import failed")."""
    model_server.fail(500, times=2)
    with pytest.raises(ModelError) as error:
        model_for(model_server, LLM_NUM_RETRIES="1").complete(
            CompletionRequest([{"role": "user", "content": "x"}], [])
        )
    assert len(model_server.requests) == 2  # one try, one retry
    assert "status 500" in str(error.value) and "tenacity" not in str(error.value)


def test_a_rate_limit_is_retried_and_a_refused_key_is_not(
    model_server: ScriptedModelServer,
) -> None:
    model_server.fail(429).reply("after the limit")
    model = model_for(model_server, LLM_NUM_RETRIES="2")
    assert (
        model.complete(CompletionRequest([{"role": "user", "content": "x"}], [])).content
        == "after the limit"
    )
    assert len(model_server.requests) == 2

    model_server.fail(401).reply("never asked")
    with pytest.raises(ModelError, match="status 401"):
        model.complete(CompletionRequest([{"role": "user", "content": "x"}], []))
    assert len(model_server.requests) == 3  # a wrong key does not get better with retries
    model_server.steps.clear()


def test_system_prompt_is_marked_for_caching_only_for_claude() -> None:
    """More on the breakpoints in test_prompt_cache.py."""
    messages = [{"role": "system", "content": "stable"}, {"role": "user", "content": "hi"}]
    marked = mark_cache_breakpoints(messages)
    assert marked[0]["content"] == [
        {"type": "text", "text": "stable", "cache_control": {"type": "ephemeral"}}
    ]
    assert marked[1]["content"] == [
        {"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}
    ]
    assert messages == [{"role": "system", "content": "stable"}, {"role": "user", "content": "hi"}]
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
    reply = model_for(model_server).complete(
        CompletionRequest([{"role": "user", "content": "x"}], TOOLS)
    )
    assert reply.reasoning_content == "I should look first."
    assert reply.tool_calls[0].name == "list_dir"


def test_a_fallback_model_answers_when_the_primary_keeps_failing(
    model_server: ScriptedModelServer,
) -> None:
    """Retries of LLM_MODEL are spent first, then the fallback (same provider: same key)."""
    model_server.fail(503, times=2).reply("from the fallback")
    model = model_for(model_server, LLM_NUM_RETRIES="1", LLM_FALLBACK_MODELS="openai/backup")
    reply = model.complete(CompletionRequest([{"role": "user", "content": "x"}], TOOLS))
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
        model.complete(CompletionRequest([{"role": "user", "content": "x"}], TOOLS))
    assert "openai/scripted" in str(error.value) and "openai/backup" in str(error.value)
    assert "sk-test-123" not in str(error.value)


def test_a_fallback_of_another_provider_gets_neither_our_key_nor_our_endpoint(
    model_server: ScriptedModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    model_server.fail(500)
    model = model_for(model_server, LLM_FALLBACK_MODELS="anthropic/claude-haiku-4-5")
    with pytest.raises(ModelError, match="anthropic/claude-haiku-4-5"):
        model.complete(CompletionRequest([{"role": "user", "content": "x"}], TOOLS))
    # Only the primary's request reached our endpoint; the fallback had no key to send.
    assert [request["model"] for request in model_server.requests] == ["scripted"]


def test_a_background_model_of_our_provider_uses_our_key_and_falls_back_to_llm_model(
    model_server: ScriptedModelServer,
) -> None:
    """HEARTBEAT_MODEL / CONSOLIDATION_MODEL: a cheaper model first, LLM_MODEL when it fails."""
    settings = LlmSettings.model_validate(
        {**model_server.env(api_key="sk-test-123"), "LLM_NUM_RETRIES": "0"}
    )
    model_server.reply("cheap answer").fail(500).reply("from LLM_MODEL")
    cheap = LitellmChatModel(settings, "openai/cheap")
    assert (
        cheap.complete(CompletionRequest([{"role": "user", "content": "x"}], [])).content
        == "cheap answer"
    )
    assert (
        cheap.complete(CompletionRequest([{"role": "user", "content": "x"}], [])).content
        == "from LLM_MODEL"
    )
    assert [request["model"] for request in model_server.requests] == ["cheap", "cheap", "scripted"]
    assert {headers["Authorization"] for headers in model_server.headers} == {"Bearer sk-test-123"}


def test_a_background_model_of_another_provider_gets_neither_our_key_nor_our_endpoint(
    model_server: ScriptedModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    model_server.reply("from LLM_MODEL")
    settings = LlmSettings.model_validate(
        {**model_server.env(api_key="sk-test-123"), "LLM_NUM_RETRIES": "0"}
    )
    cheap = LitellmChatModel(settings, "anthropic/claude-haiku-4-5")
    # No Anthropic key of its own: it fails before any request, and LLM_MODEL answers.
    assert (
        cheap.complete(CompletionRequest([{"role": "user", "content": "x"}], [])).content
        == "from LLM_MODEL"
    )
    assert [request["model"] for request in model_server.requests] == ["scripted"]


def test_a_deadline_bounds_the_call(model_server: ScriptedModelServer) -> None:
    """agent_turn passes the time left in the invocation: a slow provider is cut off in time."""
    model_server.steps.append(Step(content="late", delay=5))
    started = time.monotonic()
    with pytest.raises(ModelError):
        model_for(model_server).complete(
            CompletionRequest([{"role": "user", "content": "x"}], TOOLS, timeout=1.0)
        )
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


# -- streaming (on_text) -------------------------------------------------------------------

USER = [{"role": "user", "content": "x"}]
FAULTS = [  # how a stream fails midway, and what the failure says
    pytest.param("break_after", "incomplete chunked read", id="connection-closed"),
    pytest.param("error_after", "scripted failure mid-stream", id="error-event"),
    pytest.param("truncate_after", "without a finish_reason", id="truncated-events"),
]


def shrinks_at(texts: list[str]) -> list[int]:
    """Where the streamed text got shorter: where a retried attempt started again."""
    return [i for i in range(1, len(texts)) if len(texts[i]) < len(texts[i - 1])]


def test_streamed_text_arrives_growing_and_equals_the_reply(
    model_server: ScriptedModelServer,
) -> None:
    answer = "The quick brown fox jumps over the lazy dog."
    model_server.reply(answer)
    texts: list[str] = []
    reply = model_for(model_server).complete(CompletionRequest(USER, TOOLS, on_text=texts.append))
    assert reply.content == answer
    assert len(texts) == len(answer.split())  # a word a chunk
    assert texts[0] == "The" and texts[-1] == answer
    assert all(b.startswith(a) and len(b) > len(a) for a, b in itertools.pairwise(texts))
    assert model_server.streamed == [True]
    assert model_server.requests[0]["stream_options"] == {"include_usage": True}


def test_a_streamed_tool_call_is_the_same_as_a_non_streamed_one(
    model_server: ScriptedModelServer,
) -> None:
    arguments = '{"path": "notes/today.md", "content": "a longer text, in pieces"}'
    function = {"name": "write_file", "arguments": arguments}  # several deltas when streamed
    for _ in range(2):
        call = {"id": "call_7", "type": "function", "function": function}
        model_server.steps.append(Step(content="Saving.", tool_calls=[call]))
    model = model_for(model_server)
    plain = model.complete(CompletionRequest(USER, TOOLS))
    texts: list[str] = []
    streamed = model.complete(CompletionRequest(USER, TOOLS, on_text=texts.append))
    assert streamed.tool_calls == plain.tool_calls
    assert streamed.tool_calls[0].arguments == arguments
    assert streamed.tool_calls[0].id == "call_7"
    assert streamed.content == plain.content == "Saving." and texts[-1] == "Saving."
    assert model_server.streamed == [False, True]


def test_a_streamed_tool_call_without_text_has_no_content(
    model_server: ScriptedModelServer,
) -> None:
    model_server.call_tool("list_dir", {"path": ""})
    texts: list[str] = []
    reply = model_for(model_server).complete(CompletionRequest(USER, TOOLS, on_text=texts.append))
    assert reply.content is None and texts == []
    assert reply.tool_calls[0].name == "list_dir"
    assert reply.tool_calls[0].arguments == '{"path": ""}'


def test_a_streamed_tool_call_without_an_id_is_kept_and_named(
    model_server: ScriptedModelServer,
) -> None:
    """Some OpenAI-compatible servers send no id; litellm names such a call unstreamed."""
    call = {"id": None, "type": "function", "function": {"name": "list_dir", "arguments": "{}"}}
    model_server.steps.append(Step(tool_calls=[call]))
    model_server.steps.append(Step(tool_calls=[call]))
    model = model_for(model_server)
    plain = model.complete(CompletionRequest(USER, TOOLS))
    streamed = model.complete(CompletionRequest(USER, TOOLS, on_text=lambda text: None))
    assert [(c.name, c.arguments) for c in streamed.tool_calls] == [("list_dir", "{}")]
    assert [(c.name, c.arguments) for c in plain.tool_calls] == [("list_dir", "{}")]
    assert streamed.tool_calls[0].id.startswith("call_")


def test_a_stream_whose_opening_fails_is_retried_by_litellm(
    model_server: ScriptedModelServer,
) -> None:
    model_server.fail(500).reply("Opened the second time.")
    texts: list[str] = []
    reply = model_for(model_server, LLM_NUM_RETRIES="1").complete(
        CompletionRequest(USER, TOOLS, on_text=texts.append)
    )
    assert reply.content == "Opened the second time." and texts[-1] == reply.content
    assert model_server.streamed == [True, True]


def test_usage_and_cost_of_a_stream_are_those_of_the_same_reply_unstreamed(
    model_server: ScriptedModelServer,
) -> None:
    model_server.response_model = "gpt-4o-mini"  # priced in litellm's bundled cost map
    usage = {"prompt_tokens": 1200, "completion_tokens": 30, "cached_tokens": 1000}
    model_server.reply("Cached, mostly.", **usage).reply("Cached, mostly.", **usage)
    model = model_for(model_server)
    plain = model.complete(CompletionRequest(USER, TOOLS))
    streamed = model.complete(CompletionRequest(USER, TOOLS, on_text=lambda text: None))
    assert streamed.usage.prompt_tokens == 1200
    assert streamed.usage.completion_tokens == 30
    assert streamed.usage.cached_tokens == 1000
    assert streamed.usage.cost_usd is not None and streamed.usage.cost_usd > 0
    assert streamed.usage == plain.usage
    assert model_server.streamed == [False, True]


def test_streamed_reasoning_is_kept_and_not_shown_as_text(
    model_server: ScriptedModelServer,
) -> None:
    model_server.steps.append(Step(content="Paris.", reasoning_content="The capital of France."))
    texts: list[str] = []
    reply = model_for(model_server).complete(CompletionRequest(USER, TOOLS, on_text=texts.append))
    assert reply.reasoning_content == "The capital of France."
    assert reply.content == "Paris." and texts == ["Paris."]


@pytest.mark.parametrize(("fault", "described"), FAULTS)
def test_a_stream_failing_midway_is_retried_from_the_beginning(
    model_server: ScriptedModelServer, fault: str, described: str, caplog: pytest.LogCaptureFixture
) -> None:
    model_server.reply("First attempt goes wrong here", **{fault: 3})
    model_server.reply("Second attempt is whole.")
    texts: list[str] = []
    model = model_for(model_server, LLM_NUM_RETRIES="1")
    reply = model.complete(CompletionRequest(USER, TOOLS, on_text=texts.append, timeout=20))
    assert reply.content == "Second attempt is whole."
    assert texts[:3] == ["First", "First attempt", "First attempt goes"]
    assert shrinks_at(texts) == [3] and texts[3] == "Second"
    assert texts[-1] == "Second attempt is whole."
    assert model_server.streamed == [True, True]
    assert described in caplog.text and "sk-test-123" not in caplog.text


@pytest.mark.parametrize(("fault", "described"), FAULTS)
def test_a_stream_failing_on_every_attempt_tries_the_fallback_then_is_a_model_error(
    model_server: ScriptedModelServer, fault: str, described: str
) -> None:
    for _ in range(4):
        model_server.reply("never quite finished", **{fault: 2})
    texts: list[str] = []
    model = model_for(model_server, LLM_NUM_RETRIES="1", LLM_FALLBACK_MODELS="openai/backup")
    with pytest.raises(ModelError) as error:
        model.complete(CompletionRequest(USER, TOOLS, on_text=texts.append, timeout=20))
    assert [request["model"] for request in model_server.requests] == [
        "scripted",
        "scripted",
        "backup",
        "backup",
    ]
    assert "openai/scripted" in str(error.value) and "openai/backup" in str(error.value)
    assert described in str(error.value)
    assert "sk-test-123" not in str(error.value)
    assert texts == ["never", "never quite"] * 4  # each attempt streamed, then restarted
    assert model_server.remaining == 0 and model_server.unexpected == []


def test_a_fallback_answers_a_stream_the_primary_keeps_breaking(
    model_server: ScriptedModelServer,
) -> None:
    model_server.reply("broken", break_after=1).reply("broken", break_after=1)
    model_server.reply("From the backup.")
    texts: list[str] = []
    model = model_for(model_server, LLM_NUM_RETRIES="1", LLM_FALLBACK_MODELS="openai/backup")
    reply = model.complete(CompletionRequest(USER, TOOLS, on_text=texts.append, timeout=20))
    assert reply.content == "From the backup."
    assert texts == ["broken", "broken", "From", "From the", "From the backup."]
    assert [request["model"] for request in model_server.requests][-1] == "backup"


def test_a_stream_stalling_between_chunks_is_retried(model_server: ScriptedModelServer) -> None:
    """litellm's timeout bounds each read of a stream: a stall is a failed attempt."""
    model_server.reply("Stalls after two", tokens_per_second=0.25)  # 4 s between chunks
    model_server.reply("Fresh answer.")
    texts: list[str] = []
    model = model_for(model_server, LLM_NUM_RETRIES="1")
    started = time.monotonic()
    reply = model.complete(CompletionRequest(USER, TOOLS, on_text=texts.append, timeout=3.0))
    assert reply.content == "Fresh answer."
    assert time.monotonic() - started < 3.0  # the stall ended at the attempt's 1.5 s share
    assert model_server.streamed == [True, True]


def test_a_trickling_stream_is_cut_by_the_time_budget(model_server: ScriptedModelServer) -> None:
    """Each chunk comes well within the read timeout (0.1 s apart; each read may take the
    attempt's share, 1.5 s, room for a busy machine), but the whole would take 40 s."""
    model_server.reply(" ".join(["word"] * 400), tokens_per_second=10)
    texts: list[str] = []
    model = model_for(model_server, LLM_NUM_RETRIES="1")
    started = time.monotonic()
    with pytest.raises(ModelError, match="outlasted the time budget"):
        model.complete(CompletionRequest(USER, TOOLS, on_text=texts.append, timeout=3.0))
    assert time.monotonic() - started < 3.0 + 2
    assert 2 <= len(texts) < 100  # it streamed, and was stopped early
    assert model_server.streamed == [True]  # no time was left for a retry


def test_a_failing_on_text_is_not_a_model_failure(model_server: ScriptedModelServer) -> None:
    """The consumer's error reaches the caller as it is, and the model is not asked again."""
    model_server.reply("Some answer.")

    def on_text(text: str) -> None:
        raise RuntimeError("the display broke")

    model = model_for(model_server, LLM_NUM_RETRIES="2")
    with pytest.raises(RuntimeError, match="the display broke"):
        model.complete(CompletionRequest(USER, TOOLS, on_text=on_text))
    assert len(model_server.requests) == 1


def test_without_on_text_nothing_is_streamed(model_server: ScriptedModelServer) -> None:
    model_server.reply("Plain.", tokens_per_second=0.1, break_after=1)  # stream options unused
    reply = model_for(model_server).complete(CompletionRequest(USER, TOOLS))
    assert reply.content == "Plain."
    assert model_server.streamed == [False]
    assert "stream" not in model_server.requests[0]
