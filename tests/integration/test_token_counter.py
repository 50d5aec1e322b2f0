"""The token counter on litellm's tokenizers (offline, the bundled encodings): a request counts
as litellm counts it in one piece, while the system prompt, the same every turn, is tokenized
once per version of it, and each message of the history once (issue 31: with 200 skills the whole
request was tokenized on every count). The window of a model litellm does not know is asked of
its OpenAI-compatible server (the scripted model server, over real HTTP), once."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from typing import Any

import litellm
import pytest

from nanobot_lambda.adapters.llm import (
    litellm_model,  # noqa: F401 - litellm's offline options
    tokens,
)
from nanobot_lambda.adapters.llm.tokens import UNKNOWN_CONTEXT_WINDOW, LitellmTokenCounter
from tests.support.scripted_model import ScriptedModelServer

SYSTEM = {"role": "system", "content": "You are nanobot.\n" + "<skill>chore</skill>\n" * 200}
HISTORY: list[dict[str, Any]] = [
    {"role": "user", "content": "Read a.md please"},
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "read_file", "arguments": '{"path": "a.md"}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "the text of a.md"},
    {"role": "user", "name": "ada", "content": [{"type": "text", "text": "and b.md, twice"}]},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": f"c{n}", "type": "function", "function": {"name": "read_file", "arguments": a}}
            for n, a in ((2, '{"path": "b.md"}'), (3, '{"path": "b.md", "offset": 9}'))
        ],
    },
]
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a workspace file",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
        },
    }
]


@pytest.mark.parametrize(
    "model", ["openai/gpt-4.1-mini", "anthropic/claude-sonnet-4-5", "openai/unknown-local"]
)
@pytest.mark.parametrize("tools", [None, TOOLS])
@pytest.mark.parametrize(
    "messages", [[SYSTEM, *HISTORY], [SYSTEM, HISTORY[0]], [SYSTEM], HISTORY, HISTORY[3:], []]
)
def test_counts_as_litellm_counts_the_request_whole(
    model: str, tools: list[dict[str, Any]] | None, messages: list[dict[str, Any]]
) -> None:
    counter = LitellmTokenCounter(model)
    expected = litellm.token_counter(model=model, messages=messages, tools=tools)
    assert counter.count(messages, tools) == expected
    assert counter.count(messages, tools) == expected  # the kept count, the same


def test_each_message_and_tool_list_is_tokenized_once(monkeypatch: pytest.MonkeyPatch) -> None:
    counter = LitellmTokenCounter("openai/gpt-4.1-mini")
    counter.count([SYSTEM, HISTORY[0]], TOOLS)  # the first count: these parts are measured
    counted: list[list[dict[str, Any]]] = []
    with_tools: list[object] = []
    real = litellm.token_counter

    def spy(**arguments: Any) -> int:
        counted.append(arguments["messages"])
        with_tools.append(arguments.get("tools"))
        return int(real(**arguments))

    monkeypatch.setattr(litellm, "token_counter", spy)
    for turn in range(1, 4):  # a conversation growing by one message a count
        counter.count([SYSTEM, *HISTORY[:turn]], TOOLS)
    assert counted == [[HISTORY[1]], [HISTORY[2]]]  # only what is new, alone
    assert with_tools == [None, None]

    edited = {"role": "system", "content": SYSTEM["content"] + "<skill>new</skill>\n"}
    counter.count([SYSTEM, *HISTORY], TOOLS)
    counted.clear()
    counter.count([edited, *HISTORY], TOOLS)
    assert counted == [[edited]]  # a new system prompt; the history is known


def test_a_tokenizer_failure_estimates_high_rather_than_failing_the_turn(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    counter = LitellmTokenCounter("openai/gpt-4.1-mini")
    exact = litellm.token_counter(
        model="openai/gpt-4.1-mini", messages=[SYSTEM, *HISTORY], tools=TOOLS
    )

    def broken(**_: Any) -> int:
        raise RuntimeError("tokenizer unavailable")

    monkeypatch.setattr(litellm, "token_counter", broken)
    assert counter.count([SYSTEM, *HISTORY], TOOLS) > exact


# -- the window of a model litellm does not know, from its server -----------------------------


@pytest.fixture
def server() -> Iterator[ScriptedModelServer]:
    started = ScriptedModelServer().start()
    yield started
    started.stop()


def vllm_entry(name: str, window: int) -> dict[str, Any]:
    """An entry of vLLM's model list, as `vllm serve` answers GET /v1/models."""
    return {
        "id": name,
        "object": "model",
        "owned_by": "vllm",
        "root": name,
        "max_model_len": window,
    }


def test_the_window_a_vllm_server_lists_is_read_once_with_the_key(
    server: ScriptedModelServer,
) -> None:
    server.served_models = [vllm_entry("other", 4_096), vllm_entry("scripted", 12_288)]
    counter = LitellmTokenCounter("openai/scripted", api_base=server.base_url, api_key="sk-vllm")
    assert counter.context_window == 12_288
    again = LitellmTokenCounter("openai/scripted", api_base=server.base_url, api_key="sk-vllm")
    assert again.context_window == 12_288  # the container asked once
    assert len(server.model_lists) == 1
    assert server.model_lists[0]["Authorization"] == "Bearer sk-vllm"


@pytest.mark.parametrize(
    "listed",
    [
        None,  # no model list: a 404
        [vllm_entry("one", 8_192), vllm_entry("two", 8_192)],  # another model's windows only
        [{"id": "scripted", "object": "model", "owned_by": "organization-owner"}],  # no window
        [{"id": "scripted", "max_model_len": "lots"}],
    ],
)
def test_a_server_that_does_not_say_leaves_the_default_window(
    server: ScriptedModelServer, listed: list[dict[str, Any]] | None
) -> None:
    server.served_models = listed
    counter = LitellmTokenCounter("openai/scripted", api_base=server.base_url)
    assert counter.context_window == UNKNOWN_CONTEXT_WINDOW
    assert len(server.model_lists) == 1


def test_a_server_that_does_not_answer_leaves_the_default_window_at_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(tokens, "SERVED_WINDOW_TIMEOUT_SECONDS", 0.3)
    with socket.socket() as silent:  # accepts connections (its backlog), never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        base = f"http://127.0.0.1:{silent.getsockname()[1]}/v1"
        started = time.monotonic()
        window = LitellmTokenCounter("openai/silent", api_base=base).context_window
        assert window == UNKNOWN_CONTEXT_WINDOW
        assert time.monotonic() - started < 2


def test_a_model_litellm_knows_is_not_asked_of_the_server(server: ScriptedModelServer) -> None:
    server.served_models = [vllm_entry("gpt-4.1-mini", 4_096)]
    counter = LitellmTokenCounter("openai/gpt-4.1-mini", api_base=server.base_url)
    assert counter.context_window > 100_000  # litellm's figure
    assert server.model_lists == []
