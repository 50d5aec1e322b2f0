"""The token counter on litellm's tokenizers (offline, the bundled encodings): a request counts
as litellm counts it in one piece, while the system prompt, the same every turn, is tokenized
once per version of it (issue 31: with 200 skills it was tokenized on every count)."""

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
@pytest.mark.parametrize("messages", [[SYSTEM, *HISTORY], [SYSTEM, HISTORY[0]], [SYSTEM], HISTORY])
def test_counts_as_litellm_counts_the_request_whole(
    model: str, tools: list[dict[str, Any]] | None, messages: list[dict[str, Any]]
) -> None:
    counter = LitellmTokenCounter(model)
    expected = litellm.token_counter(model=model, messages=messages, tools=tools)
    assert counter.count(messages, tools) == expected
    assert counter.count(messages, tools) == expected  # the kept count, the same


def test_the_system_prompt_and_tools_are_tokenized_once_per_version(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    counter = LitellmTokenCounter("openai/gpt-4.1-mini")
    counter.count([SYSTEM, HISTORY[0]], TOOLS)  # the first count, and the split's cost, measured
    counted: list[list[dict[str, Any]]] = []
    with_tools: list[object] = []
    real = litellm.token_counter

    def spy(**arguments: Any) -> int:
        counted.append(arguments["messages"])
        with_tools.append(arguments.get("tools"))
        return int(real(**arguments))

    monkeypatch.setattr(litellm, "token_counter", spy)
    for turn in range(1, 4):
        counter.count([SYSTEM, *HISTORY[:turn]], TOOLS)
    assert all(SYSTEM not in messages for messages in counted)
    assert with_tools == [None, None, None]  # the history alone, each time

    edited = {"role": "system", "content": SYSTEM["content"] + "<skill>new</skill>\n"}
    counter.count([edited, HISTORY[0]])
    assert sum(edited in messages for messages in counted) == 1
