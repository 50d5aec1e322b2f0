"""Remote MCP tools through the whole stack: the local stack's agent_turn is configured with a
real MCP server process (McpServers, and WebFetchAllowNetworks for 127.0.0.1, as an operator
would for a server on a private network), offers its tools to the model, and a call's answer
reaches the model framed as untrusted; a server that is down costs only its own tools.

Each server serves the chats its access names. The owner is the local user (ALLOW_FROM's first
id); Ada (111111111) is allowed too, and writes in a group nobody listed (-1001234567890)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from nanobot_lambda.operator.local.stack import LocalStack
from tests.conftest import StackFactory, telegram_update
from tests.support.deployed import put_secret
from tests.support.mcp_server import EXPECTED_KEY, McpServerProcess
from tests.support.scripted_model import ScriptedModelServer


@pytest.fixture(scope="module")
def mcp() -> Iterator[McpServerProcess]:
    process = McpServerProcess().start()
    yield process
    process.stop()


def offered(model_server: ScriptedModelServer, index: int = 0) -> list[str]:
    return [tool["function"]["name"] for tool in model_server.requests[index].get("tools", [])]


def remote(names: list[str]) -> list[str]:
    return [name for name in names if name.startswith(("mail_", "docs_"))]


def last_tool_result(model_server: ScriptedModelServer) -> str:
    message = model_server.requests[-1]["messages"][-1]
    assert message["role"] == "tool"
    content: str = message["content"]
    return content


def ada_says(stack: LocalStack, fixture: str, text: str, update_id: int) -> None:
    """Ada writes in her private chat (`text_private`) or in the group (`group_mention`)."""
    update: dict[str, Any] = telegram_update(fixture)
    update["update_id"] = update_id
    update["message"]["message_id"] = update_id % 100000
    update["message"]["text"] = text
    stack.post_update(update)
    stack.process_queue()


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


def test_each_server_serves_only_the_chats_its_access_names(
    aws: str,
    stack_factory: StackFactory,
    model_server: ScriptedModelServer,
    mcp: McpServerProcess,
) -> None:
    """`mail` is the owner's (the default) with a header secret; `docs` is everyone allowed's.
    Ada's chat is offered `docs` only, the group neither; a call to `mail` the model makes
    anyway in either is refused like an unknown tool and no request reaches the server; the
    owner's chat calls it with the header. Each chat's tool list stays the same turn to turn."""
    put_secret("/nanobot/mcp/mail-key", EXPECTED_KEY)
    servers = [
        {
            "name": "mail",
            "url": mcp.url,
            "headers": {"X-Api-Key": {"param": "/nanobot/mcp/mail-key"}},
            "tools": ["whoami"],
        },
        {"name": "docs", "url": mcp.url, "tools": ["add"], "access": "allowed"},
    ]
    stack = stack_factory(McpServers=json.dumps(servers), WebFetchAllowNetworks="127.0.0.1/32")
    mcp.forget_requests()

    model_server.call_tool("mail_whoami", {}).reply("I cannot read mail here.")
    ada_says(stack, "text_private", "read the owner's mail", 900000101)
    assert remote(offered(model_server, 0)) == ["docs_add"]
    refused = last_tool_result(model_server)
    assert refused.startswith("Error: there is no tool named 'mail_whoami'. Available tools:")
    assert "mail_" not in refused.split("Available tools:")[1]
    assert mcp.calls() == [] and all(not request["key"] for request in mcp.requests())

    model_server.call_tool("mail_whoami", {}).reply("Not here either.")
    ada_says(stack, "group_mention", "@nano_lambda_bot read the owner's mail", 900000102)
    assert remote(offered(model_server, 2)) == []
    assert last_tool_result(model_server).startswith("Error: there is no tool named 'mail_whoami'")
    assert mcp.calls() == [] and all(not request["key"] for request in mcp.requests())

    model_server.call_tool("mail_whoami", {}).reply("Your key works.")
    stack.post_update(stack.text_update("is my mail key fine?"))
    stack.process_queue()
    assert remote(offered(model_server, 4)) == ["docs_add", "mail_whoami"]
    assert "key ok" in last_tool_result(model_server)
    assert mcp.calls() == [{"method": "tools/call", "tool": "whoami", "key": True}]

    # Ada again, after the owner's turn in the same container: her list, byte for byte.
    model_server.reply("Hello again.")
    ada_says(stack, "text_private", "hello", 900000103)
    assert json.dumps(model_server.requests[6]["tools"]) == json.dumps(
        model_server.requests[0]["tools"]
    )
    assert len(mcp.calls()) == 1
    assert stack.poller.failures == 0
