"""Remote MCP tools without a server: the operator's MCP_SERVERS as settings (what is refused,
and why), who may use a server (its access, for each kind of chat), the names and schemas the
model is offered, each chat offered only its servers' tools (listed once, a failing server left
out), a call to another chat's tool refused like an unknown tool, and header secrets read by
reference and redacted."""

from __future__ import annotations

import json
from typing import Any

import pytest

from nanobot_lambda.adapters.mcp.client import mcp_servers
from nanobot_lambda.core.allowlist import AllowList, Audience
from nanobot_lambda.core.errors import ConfigError, ToolError
from nanobot_lambda.core.model import ToolCall
from nanobot_lambda.core.redaction import redact
from nanobot_lambda.core.remote_tools import (
    RemoteResult,
    RemoteTool,
    ServerAccess,
    may_use_server,
)
from nanobot_lambda.core.tools import ToolRegistry
from nanobot_lambda.settings import McpSettings
from nanobot_lambda.tools.files import file_tools
from nanobot_lambda.tools.remote import RemoteToolbox, remote_tool
from tests.support.fakes import MemoryWorkspace
from tests.support.job_context import job_context

OWNER = 111
LISTED = 222  # in ALLOW_FROM
PAIRED = 333  # approved by pairing
STRANGER = 444
LISTED_GROUP = -1001  # ALLOW_FROM lists the group itself
GROUP = -1002  # heard only when a listed person speaks in it
AUDIENCE = Audience(
    OWNER,
    AllowList.parse(f"{OWNER},{LISTED},{LISTED_GROUP},@ada_l"),
    approved=lambda user_id: user_id == PAIRED,
)


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
        ([{"name": "x", "url": "https://a", "access": "everyone"}], '"owner", "allowed" or'),
        ([{"name": "x", "url": "https://a", "access": []}], "a list of Telegram chat ids"),
        ([{"name": "x", "url": "https://a", "access": ["@ada_l"]}], "chat ids"),
        ([{"name": "x", "url": "https://a", "access": [0]}], "chat ids"),
        ([{"name": "x", "url": "https://a", "access": [True]}], "chat ids"),
        (
            [
                {
                    "name": "mail",
                    "url": "https://a",
                    "headers": {"Authorization": {"param": "/nanobot/mcp/mail"}},
                    "access": "allowed",
                }
            ],
            "mail: its header Authorization is read from a secret, which serves the owner only; "
            'to let others use the server with it, add "share_secret_headers": true',
        ),
        (
            [
                {
                    "name": "mail",
                    "url": "https://a",
                    "headers": {"X-Key": {"secret": "nanobot/mcp/mail"}},
                    "access": [OWNER, LISTED],
                }
            ],
            "share_secret_headers",
        ),
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


def test_a_server_is_the_owner_s_unless_its_access_says_otherwise() -> None:
    """Configurations from before access existed keep working: their servers are the owner's."""
    (before,) = settings([{"name": "x", "url": "https://a"}]).mcp_servers
    assert before.access == "owner" and not before.share_secret_headers
    allowed, listed, shared, plain = settings(
        [
            {"name": "a", "url": "https://a", "access": "allowed"},
            {"name": "b", "url": "https://b", "access": [LISTED, LISTED_GROUP, LISTED]},
            {
                "name": "c",
                "url": "https://c",
                "headers": {"Authorization": {"param": "/nanobot/mcp/c"}},
                "access": "allowed",
                "share_secret_headers": True,
            },
            # A header written out is no secret: opening the server needs no flag.
            {"name": "d", "url": "https://d", "headers": {"Accept": "x"}, "access": "allowed"},
        ]
    ).mcp_servers
    assert allowed.access == "allowed"
    assert listed.access == frozenset({LISTED, LISTED_GROUP})
    assert shared.access == "allowed" and shared.secret_headers == ["Authorization"]
    assert plain.secret_headers == []


@pytest.mark.parametrize(
    ("chat", "owner_only", "allowed", "listed"),
    [
        (OWNER, True, True, False),  # the owner's chat, cron jobs, tasks and heartbeat
        (LISTED, False, True, True),  # a person ALLOW_FROM lists by id
        (PAIRED, False, True, False),  # a person the owner approved by pairing
        (LISTED_GROUP, False, True, True),  # a group ALLOW_FROM lists
        (GROUP, False, False, False),  # a group heard for its listed members: not everyone's
        (STRANGER, False, False, False),
        (None, False, False, False),  # a job without a chat uses no server
    ],
)
def test_who_may_use_a_server_is_decided_by_the_job_s_chat(
    chat: int | None, owner_only: bool, allowed: bool, listed: bool
) -> None:
    chats: ServerAccess = frozenset({LISTED, LISTED_GROUP})
    assert may_use_server("owner", chat, AUDIENCE) is owner_only
    assert may_use_server("allowed", chat, AUDIENCE) is allowed
    assert may_use_server(chats, chat, AUDIENCE) is listed


def test_without_an_owner_nobody_uses_an_owner_server_and_a_star_opens_allowed_ones() -> None:
    everyone = Audience(None, AllowList.parse("*"))
    assert not may_use_server("owner", LISTED, everyone)
    assert may_use_server("allowed", STRANGER, everyone)
    assert may_use_server("allowed", GROUP, everyone)
    # A person ALLOW_FROM names by username only is not counted: usernames change hands.
    by_name = Audience(OWNER, AllowList.parse(f"{OWNER},@ada_l"))
    assert not may_use_server("allowed", 555, by_name)


def test_an_approved_person_or_invited_group_is_looked_up_only_when_not_otherwise_allowed() -> None:
    """A group may be admitted by an invite link (core/invites.py) as a person may by pairing."""
    asked: list[int] = []
    audience = Audience(
        OWNER,
        AllowList.parse(f"{OWNER},{LISTED}"),
        approved=lambda user: asked.append(user) is not None,
    )
    for chat in (OWNER, LISTED, GROUP, STRANGER):
        may_use_server("allowed", chat, audience)
        may_use_server("owner", chat, audience)
    assert asked == [GROUP, STRANGER]


class FakeServer:
    def __init__(
        self,
        name: str,
        tools: list[RemoteTool],
        fail: bool = False,
        access: ServerAccess = "owner",
    ) -> None:
        self.name = name
        self.timeout_seconds = 5.0
        self.allowed_tools: frozenset[str] | None = None
        self.access = access
        self._tools = tools
        self._fail = fail
        self.listings = 0
        self.calls: list[str] = []

    def list_tools(self, timeout: float) -> list[RemoteTool]:
        self.listings += 1
        if self._fail:
            raise ToolError(f"the MCP server {self.name} failed (listing its tools: ConnectError)")
        return self._tools

    def call(self, tool: str, arguments: dict[str, Any], timeout: float) -> RemoteResult:
        self.calls.append(tool)
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
    toolbox = RemoteToolbox([good, other, broken], 100, AUDIENCE)
    assert [tool.name for tool in toolbox.tools_for(OWNER)] == ["a_two", "b_alpha", "b_zeta"]
    toolbox.tools_for(OWNER)
    assert (good.listings, other.listings, broken.listings) == (1, 1, 1)


def test_each_chat_is_offered_only_its_servers_tools_and_they_stay_the_same() -> None:
    mail = FakeServer("mail", [RemoteTool("send", "S.")])  # the owner's
    docs = FakeServer("docs", [RemoteTool("search", "S.")], access="allowed")
    team = FakeServer("team", [RemoteTool("board", "B.")], access=frozenset({LISTED_GROUP}))
    toolbox = RemoteToolbox([mail, docs, team], 100, AUDIENCE)

    def offered(chat: int) -> list[str]:
        return [tool.name for tool in toolbox.tools_for(chat)]

    assert offered(STRANGER) == [] and offered(GROUP) == []
    assert mail.listings == docs.listings == team.listings == 0  # nothing was asked for them
    assert offered(PAIRED) == ["docs_search"]
    assert offered(LISTED_GROUP) == ["docs_search", "team_board"]
    assert offered(OWNER) == ["docs_search", "mail_send"]
    assert offered(PAIRED) == ["docs_search"]  # the same list again, from the first listing
    assert (mail.listings, docs.listings, team.listings) == (1, 1, 1)


def test_a_tool_the_job_s_chat_may_not_use_is_refused_like_an_unknown_one() -> None:
    """A prompt-injected model naming another chat's tool gets the unknown-tool error, and the
    server is never called; the next job of the owner has the tool again."""
    mail = FakeServer("mail", [RemoteTool("send", "S.")])
    toolbox = RemoteToolbox([mail], 100, AUDIENCE)
    own = ToolRegistry(file_tools())
    own_tools = own.definitions()
    ctx = job_context(MemoryWorkspace())

    owners = own.with_tools(toolbox.tools_for(OWNER))
    assert "mail_send" in owners.names
    assert "\nsend({})\n</untrusted_web_content>" in owners.execute(
        ctx, ToolCall("c1", "mail_send", "{}")
    )

    strangers = own.with_tools(toolbox.tools_for(STRANGER))
    assert strangers.definitions() == own_tools and "mail_send" not in strangers.names
    refused = strangers.execute(ctx, ToolCall("c2", "mail_send", "{}"))
    assert refused.startswith("Error: there is no tool named 'mail_send'. Available tools: ")
    assert "mail" not in refused.removeprefix("Error: there is no tool named 'mail_send'")
    assert mail.calls == ["send"]  # the owner's call only

    assert own.with_tools(toolbox.tools_for(OWNER)).names[-1] == "mail_send"
    assert "mail_send" not in own.names  # a registry is a value: the next job's is its own


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
