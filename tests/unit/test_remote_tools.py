"""Remote MCP tools without a server: the operator's MCP_SERVERS as settings (what is refused,
and why), the names and schemas the model is offered, listing once and leaving a failing
server out, and header secrets read by reference and redacted."""

from __future__ import annotations

import json
from typing import Any

import pytest

from nanobot_lambda.adapters.mcp.client import mcp_servers
from nanobot_lambda.core.errors import ConfigError, ToolError
from nanobot_lambda.core.redaction import redact
from nanobot_lambda.core.remote_tools import RemoteResult, RemoteTool
from nanobot_lambda.settings import McpSettings
from nanobot_lambda.tools.remote import RemoteToolbox, remote_tool


def settings(servers: Any) -> McpSettings:
    value = servers if isinstance(servers, str) else json.dumps(servers)
    parsed: McpSettings = McpSettings.from_env({"MCP_SERVERS": value})
    return parsed


@pytest.mark.parametrize(
    ("servers", "problem"),
    [
        ("[{", "is not JSON"),
        ('{"name": "x"}', "must be a JSON list"),
        ([{"name": "Git Hub", "url": "https://x"}], "name"),
        ([{"name": "x", "url": "ftp://x"}], "url"),
        ([{"name": "x", "url": "https://a"}, {"name": "x", "url": "https://b"}], "unique"),
        (
            [{"name": "x", "url": "https://a", "headers": {"A": {"param": "/other/key"}}}],
            "/nanobot/mcp/",
        ),
        (
            [{"name": "x", "url": "https://a", "headers": {"A": {"secret": "prod/db"}}}],
            "nanobot/mcp/",
        ),
        ([{"name": "x", "url": "https://a", "headers": {"Bad Header": "v"}}], "header name"),
        ([{"name": "x", "url": "https://a", "command": "rm -rf /"}], "command"),
    ],
)
def test_a_configuration_that_is_not_right_is_refused_saying_why(
    servers: Any, problem: str
) -> None:
    with pytest.raises(ConfigError, match="MCP_SERVERS") as raised:
        settings(servers)
    assert problem in str(raised.value)


def test_an_empty_setting_means_no_servers() -> None:
    assert settings("").mcp_servers == () and settings([]).mcp_servers == ()


class FakeServer:
    def __init__(self, name: str, tools: list[RemoteTool], fail: bool = False) -> None:
        self.name = name
        self.timeout_seconds = 5.0
        self.allowed_tools: frozenset[str] | None = None
        self._tools = tools
        self._fail = fail
        self.listings = 0

    def list_tools(self, timeout: float) -> list[RemoteTool]:
        self.listings += 1
        if self._fail:
            raise ToolError(f"the MCP server {self.name} failed (listing its tools: ConnectError)")
        return self._tools

    def call(self, tool: str, arguments: dict[str, Any], timeout: float) -> RemoteResult:
        return RemoteResult(f"{tool}({json.dumps(arguments)})")


def test_names_schemas_and_descriptions_are_what_the_model_apis_accept() -> None:
    server = FakeServer("srv", [])
    odd = remote_tool(server, RemoteTool("get.issue/v2", "Gets.", {"type": "array"}), 5, 100)
    assert odd.name == "srv_get_issue_v2"
    assert odd.parameters == {"type": "object", "properties": {}}  # not an object: none
    long = remote_tool(server, RemoteTool("x" * 100, "d" * 5_000), 5, 100)
    assert len(long.name) == 64 and len(long.description) == 1_000
    assert long.description.startswith("[srv MCP server] ddd")


def test_tools_are_listed_once_sorted_filtered_and_a_failing_server_is_left_out() -> None:
    good = FakeServer("b", [RemoteTool("zeta", "Z."), RemoteTool("alpha", "A.")])
    good.allowed_tools = frozenset({"zeta", "alpha"})
    other = FakeServer("a", [RemoteTool("one", "1."), RemoteTool("two", "2.")])
    other.allowed_tools = frozenset({"two"})
    broken = FakeServer("c", [], fail=True)
    toolbox = RemoteToolbox([good, other, broken], 100)
    assert [tool.name for tool in toolbox.tools()] == ["a_two", "b_alpha", "b_zeta"]
    toolbox.tools()
    assert (good.listings, other.listings, broken.listings) == (1, 1, 1)


def test_header_secrets_are_read_by_reference_and_redacted_from_then_on() -> None:
    configs = settings(
        [
            {
                "name": "x",
                "url": "https://x.example/mcp",
                "headers": {
                    "Authorization": {"param": "/nanobot/mcp/x-auth"},
                    "X-Other": {"secret": "nanobot/mcp/x-other"},
                    "Accept": "application/json",
                },
            }
        ]
    ).mcp_servers
    reads: list[tuple[str, str]] = []

    def fetch(kind: str, name: str) -> str:
        reads.append((kind, name))
        return f"value-of-{name.rsplit('/', 1)[-1]}-0123456789"

    (server,) = mcp_servers(configs, [], fetch)
    assert reads == [("param", "/nanobot/mcp/x-auth"), ("secret", "nanobot/mcp/x-other")]
    assert redact("token value-of-x-auth-0123456789 here") == "token [REDACTED] here"
    assert redact("value-of-x-other-0123456789") == "[REDACTED]"
    # A value written out in the configuration is no secret: results may show it.
    assert redact("type application/json") == "type application/json"
    assert server.name == "x" and server.timeout_seconds == 30
