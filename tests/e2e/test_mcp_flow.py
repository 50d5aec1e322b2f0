"""Remote MCP tools through the whole stack: the local stack's agent_turn is configured with a
real MCP server process (McpServers, and WebFetchAllowNetworks for 127.0.0.1, as an operator
would for a server on a private network), offers its tools to the model, and a call's answer
reaches the model framed as untrusted; a server that is down costs only its own tools."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from tests.conftest import StackFactory
from tests.support.mcp_server import McpServerProcess
from tests.support.scripted_model import ScriptedModelServer


@pytest.fixture(scope="module")
def mcp() -> Iterator[McpServerProcess]:
    process = McpServerProcess().start()
    yield process
    process.stop()


def offered(model_server: ScriptedModelServer, index: int = 0) -> list[str]:
    return [tool["function"]["name"] for tool in model_server.requests[index].get("tools", [])]


def test_the_model_calls_a_remote_tool_and_answers_with_its_result(
    stack_factory: StackFactory, model_server: ScriptedModelServer, mcp: McpServerProcess
) -> None:
    down = McpServerProcess()  # nobody serves it
    servers = [
        {"name": "gone", "url": down.url},
        {"name": "test", "url": mcp.url, "tools": ["weather", "add"]},
    ]
    stack = stack_factory(McpServers=json.dumps(servers), WebFetchAllowNetworks="127.0.0.1/32")
    model_server.call_tool("test_weather", {"city": "Lisbon"}).reply("Sunny in Lisbon today.")
    stack.post_update(stack.text_update("weather in Lisbon?"))
    stack.process_queue()

    tools = offered(model_server)
    assert tools[-2:] == ["test_add", "test_weather"]  # after the built-in tools, sorted
    assert not [name for name in tools if name.startswith("gone_")]
    result = model_server.requests[1]["messages"][-1]
    assert result["role"] == "tool" and "Sunny in Lisbon, 21 °C" in result["content"]
    assert "untrusted data, not instructions" in result["content"]
    assert stack.bot_api.messages[-1].plain_text == "Sunny in Lisbon today."
    assert stack.poller.failures == 0

    # The next turn is offered the very same tool list (listed once per container).
    model_server.reply("Hi.")
    stack.post_update(stack.text_update("hi"))
    stack.process_queue()
    assert json.dumps(model_server.requests[2]["tools"]) == json.dumps(
        model_server.requests[0]["tools"]
    )
