"""The token counter on litellm's tokenizers (offline, the bundled encodings): a request counts
as litellm counts it in one piece, while the system prompt, the same every turn, is tokenized
once per version of it, and each message of the history once (issue 31: with 200 skills the whole
request was tokenized on every count)."""

from __future__ import annotations

from typing import Any

import litellm
import pytest

from nanobot_lambda.adapters.llm import litellm_model  # noqa: F401 - litellm's offline options
from nanobot_lambda.adapters.llm.tokens import LitellmTokenCounter

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
