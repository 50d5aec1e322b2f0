"""Prompt-cache breakpoints on the wire: litellm against a scripted Anthropic Messages API (and
OpenAI-compatible servers for OpenRouter and OpenAI) over real HTTP.

A Claude request carries `cache_control` after the system prompt, at the end of the history
(the message before the current user message) and on its last message; other models get none.
The caller's messages, saved to the session afterwards, are never changed.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

import pytest

from nanobot_lambda.adapters.llm.litellm_model import LitellmChatModel
from nanobot_lambda.adapters.llm.litellm_model.prompt_cache import (
    MAX_CACHE_BREAKPOINTS,
    mark_cache_breakpoints,
)
from nanobot_lambda.core.model import CompletionRequest
from nanobot_lambda.settings import LlmSettings
from tests.support.anthropic_server import AnthropicServer, cache_breakpoints
from tests.support.scripted_model import ScriptedModelServer

EPHEMERAL = {"type": "ephemeral"}
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "list_dir",
            "description": "List a folder of the workspace.",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
        },
    }
]
# A 1x1 PNG, as the Telegram adapter sends a photo inline.
PIXEL = (
    "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk"
    "+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)


@pytest.fixture
def anthropic() -> Iterator[AnthropicServer]:
    server = AnthropicServer().start()
    yield server
    server.stop()


def claude(server: AnthropicServer) -> LitellmChatModel:
    return LitellmChatModel(LlmSettings.model_validate({**server.env(), "LLM_NUM_RETRIES": "0"}))


def tool_call(call_id: str, path: str = ".") -> dict[str, Any]:
    arguments = json.dumps({"path": path})
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": "list_dir", "arguments": arguments},
    }


def conversation() -> list[dict[str, Any]]:
    """A second turn's first call: system, the first turn, the current user message."""
    return [
        {"role": "system", "content": "You are nanobot. " * 50},
        {"role": "user", "content": "[time: Mon 09:00]\n\nhi"},
        {"role": "assistant", "content": "Hello! How can I help?"},
        {"role": "user", "content": "[time: Mon 09:01]\n\nwhat is in my workspace?"},
    ]


def tool_loop() -> list[dict[str, Any]]:
    """The same turn's second call: the model listed a folder, the result follows."""
    return [
        *conversation(),
        {"role": "assistant", "content": None, "tool_calls": [tool_call("toolu_01")]},
        {"role": "tool", "tool_call_id": "toolu_01", "name": "list_dir", "content": "AGENTS.md"},
    ]


def changed(marked: list[dict[str, Any]], messages: list[dict[str, Any]]) -> list[int]:
    return [index for index, message in enumerate(marked) if message != messages[index]]


# -- Anthropic -------------------------------------------------------------------------------


def test_a_conversation_is_marked_after_the_system_prompt_history_and_user_message(
    anthropic: AnthropicServer,
) -> None:
    messages = conversation()
    sent = copy.deepcopy(messages)
    anthropic.reply("Only AGENTS.md.")
    reply = claude(anthropic).complete(CompletionRequest(messages, TOOLS))
    assert reply.content == "Only AGENTS.md."
    body = anthropic.requests[0]
    assert anthropic.paths == ["/v1/messages"]
    assert anthropic.headers[0]["x-api-key"] == "test-key"
    assert cache_breakpoints(body) == [
        "system[0]",
        "messages[1].content[0]",  # the end of the history: the first turn's answer
        "messages[2].content[0]",  # the current user message
    ]
    assert body["system"] == [
        {"type": "text", "text": messages[0]["content"], "cache_control": EPHEMERAL}
    ]
    assert [message["role"] for message in body["messages"]] == ["user", "assistant", "user"]
    assert body["messages"][0]["content"] == [{"type": "text", "text": messages[1]["content"]}]
    assert body["messages"][1]["content"] == [
        {"type": "text", "text": "Hello! How can I help?", "cache_control": EPHEMERAL}
    ]
    assert body["messages"][2]["content"] == [
        {"type": "text", "text": messages[3]["content"], "cache_control": EPHEMERAL}
    ]
    assert "cache_control" not in json.dumps(body["tools"])
    assert messages == sent  # the caller's messages are saved as they were


def test_a_tool_loop_call_marks_the_newest_tool_result(anthropic: AnthropicServer) -> None:
    messages = tool_loop()
    sent = copy.deepcopy(messages)
    anthropic.reply("Only AGENTS.md.")
    claude(anthropic).complete(CompletionRequest(messages, TOOLS))
    body = anthropic.requests[0]
    assert cache_breakpoints(body) == [
        "system[0]",
        "messages[1].content[0]",  # still the end of the history
        "messages[4].content[0]",  # the tool result, marked on the tool_result block itself
    ]
    tool_use = body["messages"][3]["content"][0]
    assert tool_use["type"] == "tool_use" and "cache_control" not in tool_use
    assert body["messages"][4]["content"] == [
        {
            "type": "tool_result",
            "tool_use_id": "toolu_01",
            "content": "AGENTS.md",  # still the string it will be on the next call
            "cache_control": EPHEMERAL,
        }
    ]
    # The current user message is no longer a breakpoint: the tool result's covers it.
    assert body["messages"][2]["content"] == [{"type": "text", "text": messages[3]["content"]}]
    assert messages == sent


def test_of_parallel_tool_results_the_last_is_marked(anthropic: AnthropicServer) -> None:
    messages = [
        *conversation(),
        {
            "role": "assistant",
            "content": "Looking.",
            "tool_calls": [tool_call("toolu_01"), tool_call("toolu_02", "memory")],
        },
        {"role": "tool", "tool_call_id": "toolu_01", "name": "list_dir", "content": "AGENTS.md"},
        {"role": "tool", "tool_call_id": "toolu_02", "name": "list_dir", "content": "MEMORY.md"},
    ]
    sent = copy.deepcopy(messages)
    anthropic.reply("Two files.")
    claude(anthropic).complete(CompletionRequest(messages, TOOLS))
    body = anthropic.requests[0]
    assert cache_breakpoints(body) == [
        "system[0]",
        "messages[1].content[0]",
        "messages[4].content[1]",  # the second tool_result of the merged user message
    ]
    results = body["messages"][4]["content"]
    assert [result["tool_use_id"] for result in results] == ["toolu_01", "toolu_02"]
    assert messages == sent


def test_a_user_message_with_an_image_is_marked_on_its_last_part(
    anthropic: AnthropicServer,
) -> None:
    parts: list[dict[str, Any]] = [
        {"type": "text", "text": "[time: Mon 09:01]"},
        {"type": "text", "text": "what is this?"},
        {"type": "image_url", "image_url": {"url": PIXEL}},
    ]
    messages = [*conversation()[:3], {"role": "user", "content": parts}]
    sent = copy.deepcopy(messages)
    anthropic.reply("A pixel.")
    claude(anthropic).complete(CompletionRequest(messages, TOOLS))
    body = anthropic.requests[0]
    assert cache_breakpoints(body) == [
        "system[0]",
        "messages[1].content[0]",
        "messages[2].content[2]",
    ]
    image = body["messages"][2]["content"][2]
    assert image["type"] == "image" and image["cache_control"] == EPHEMERAL
    assert messages == sent
    assert "cache_control" not in parts[-1]


def test_a_first_message_gets_two_breakpoints(anthropic: AnthropicServer) -> None:
    """No history yet: the system prompt and the user message."""
    anthropic.reply("Hello!")
    claude(anthropic).complete(CompletionRequest(conversation()[:2], TOOLS))
    assert cache_breakpoints(anthropic.requests[0]) == ["system[0]", "messages[0].content[0]"]


def test_a_streamed_call_carries_the_same_breakpoints_and_usage(
    anthropic: AnthropicServer,
) -> None:
    usage = {"input_tokens": 40, "cache_read_input_tokens": 1900, "output_tokens": 12}
    anthropic.reply("Only AGENTS.md.", **usage).reply("Only AGENTS.md.", **usage)
    model = claude(anthropic)
    plain = model.complete(CompletionRequest(tool_loop(), TOOLS))
    seen: list[str] = []
    streamed = model.complete(CompletionRequest(tool_loop(), TOOLS, on_text=seen.append))
    assert anthropic.requests[1]["stream"] is True
    assert cache_breakpoints(anthropic.requests[1]) == cache_breakpoints(anthropic.requests[0])
    assert streamed.content == plain.content == "Only AGENTS.md." == seen[-1]
    assert len(seen) > 1  # it did arrive in pieces
    assert streamed.usage == plain.usage
    assert streamed.usage.cached_tokens == 1900


def test_a_streamed_tool_use_is_read(anthropic: AnthropicServer) -> None:
    anthropic.call_tool("list_dir", {"path": "memory"}, text="Looking.")
    reply = claude(anthropic).complete(
        CompletionRequest(conversation(), TOOLS, on_text=lambda _text: None)
    )
    assert reply.content == "Looking."
    (call,) = reply.tool_calls
    assert call.name == "list_dir" and json.loads(call.arguments) == {"path": "memory"}
    assert call.id.startswith("toolu_")


def test_cache_reads_are_counted_as_cached_tokens(anthropic: AnthropicServer) -> None:
    """Anthropic reports cache reads and writes apart from `input_tokens`; litellm adds them to
    the prompt tokens and the reads are the cached tokens /usage shows."""
    anthropic.reply(
        "Hi.",
        input_tokens=30,
        cache_read_input_tokens=1800,
        cache_creation_input_tokens=170,
        output_tokens=5,
    )
    usage = claude(anthropic).complete(CompletionRequest(conversation(), TOOLS)).usage
    assert usage.cached_tokens == 1800
    assert usage.prompt_tokens == 30 + 1800 + 170
    assert usage.completion_tokens == 5
    assert usage.cost_usd is not None and usage.cost_usd > 0


def test_a_tool_use_reply_round_trips(anthropic: AnthropicServer) -> None:
    """The turn's next call sends the tool call back; the tool result is then the last mark."""
    anthropic.call_tool("list_dir", {"path": "."}).reply("Only AGENTS.md.")
    model = claude(anthropic)
    messages = conversation()
    first = model.complete(CompletionRequest(messages, TOOLS))
    (call,) = first.tool_calls
    messages += [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [tool_call(call.id)],
        },
        {"role": "tool", "tool_call_id": call.id, "name": "list_dir", "content": "AGENTS.md"},
    ]
    assert model.complete(CompletionRequest(messages, TOOLS)).content == "Only AGENTS.md."
    second = anthropic.requests[1]
    assert second["messages"][3]["content"][0]["id"] == call.id
    assert cache_breakpoints(second)[-1] == "messages[4].content[0]"
    assert all(len(cache_breakpoints(body)) <= MAX_CACHE_BREAKPOINTS for body in anthropic.requests)


def test_breakpoints_the_caller_set_count_toward_the_limit(anthropic: AnthropicServer) -> None:
    messages = conversation()
    messages[3] = {
        "role": "user",
        "content": [
            {"type": "text", "text": "a", "cache_control": EPHEMERAL},
            {"type": "text", "text": "b", "cache_control": EPHEMERAL},
            {"type": "text", "text": "c"},
        ],
    }
    anthropic.reply("ok")
    claude(anthropic).complete(CompletionRequest(messages, TOOLS))
    # Two of the caller's, then the system prompt and the end of the history: four in all.
    assert cache_breakpoints(anthropic.requests[0]) == [
        "system[0]",
        "messages[1].content[0]",
        "messages[2].content[0]",
        "messages[2].content[1]",
    ]


# -- other providers -------------------------------------------------------------------------


def test_openrouter_claude_gets_the_markers_in_content_blocks(
    model_server: ScriptedModelServer,
) -> None:
    """OpenRouter speaks the OpenAI format: litellm moves the tool message's marker into a
    content block, where OpenRouter passes it on to Anthropic."""
    model_server.reply("Only AGENTS.md.")
    settings = LlmSettings.model_validate(
        {
            "LLM_MODEL": "openrouter/anthropic/claude-sonnet-4.5",
            "LLM_API_BASE": model_server.base_url,
            "LLM_API_KEY": "sk-or-test",
            "LLM_NUM_RETRIES": "0",
        }
    )
    messages = tool_loop()
    sent = copy.deepcopy(messages)
    LitellmChatModel(settings).complete(CompletionRequest(messages, TOOLS))
    wire = model_server.requests[0]["messages"]
    marked = [index for index, message in enumerate(wire) if "cache_control" in json.dumps(message)]
    assert marked == [0, 2, 5]
    assert wire[0]["content"][-1]["cache_control"] == EPHEMERAL
    assert wire[2]["content"] == [
        {"type": "text", "text": "Hello! How can I help?", "cache_control": EPHEMERAL}
    ]
    assert wire[5]["content"] == [{"type": "text", "text": "AGENTS.md", "cache_control": EPHEMERAL}]
    assert "cache_control" not in wire[5]
    assert messages == sent


def test_an_openai_model_gets_no_markers(model_server: ScriptedModelServer) -> None:
    model_server.reply("Only AGENTS.md.", prompt_tokens=2000, cached_tokens=1920)
    settings = LlmSettings.model_validate(
        {
            "LLM_MODEL": "openai/gpt-4o-mini",
            "LLM_API_BASE": model_server.base_url,
            "LLM_API_KEY": "sk-test",
            "LLM_NUM_RETRIES": "0",
        }
    )
    messages = tool_loop()
    reply = LitellmChatModel(settings).complete(CompletionRequest(messages, TOOLS))
    request = model_server.requests[0]
    assert "cache_control" not in json.dumps(request)
    assert request["messages"][0] == messages[0]  # the system prompt still a plain string
    assert reply.usage.cached_tokens == 1920  # OpenAI caches by itself and says so


# -- the marking itself ----------------------------------------------------------------------


def test_an_end_of_history_that_cannot_be_marked_hands_its_mark_back() -> None:
    """An assistant message with only tool calls has no block litellm would mark: the tool
    result before it takes the end of history's breakpoint."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "stable"},
        {"role": "user", "content": "list"},
        {"role": "assistant", "content": None, "tool_calls": [tool_call("t1")]},
        {"role": "tool", "tool_call_id": "t1", "name": "list_dir", "content": "AGENTS.md"},
        {"role": "assistant", "content": None, "tool_calls": [tool_call("t2")]},
        {"role": "user", "content": "go on"},
    ]
    sent = copy.deepcopy(messages)
    marked = mark_cache_breakpoints(messages)
    assert messages == sent
    assert changed(marked, messages) == [0, 3, 5]
    assert marked[3] == {**messages[3], "cache_control": EPHEMERAL}
    assert marked[4] is messages[4]


def test_blank_text_is_not_marked_and_nothing_exceeds_the_limit() -> None:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "stable"},
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "  "},
        {"role": "user", "content": "again"},
    ]
    marked = mark_cache_breakpoints(messages)
    assert changed(marked, messages) == [0, 1, 3]
    crowded: list[dict[str, Any]] = [
        {"role": "system", "content": [{"type": "text", "text": "s", "cache_control": EPHEMERAL}]},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": str(index), "cache_control": EPHEMERAL}
                for index in range(MAX_CACHE_BREAKPOINTS)
            ],
        },
    ]
    assert mark_cache_breakpoints(crowded) == crowded
