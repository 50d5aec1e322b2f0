"""Tools of remote MCP servers (`MCP_SERVERS`), as the core sees them: a server lists its tools
and runs a call; the adapter (`adapters/mcp/`) speaks the protocol. Offering them to the model
is `tools/remote.py`'s.

The servers are the operator's to configure (a template parameter), never the model's: a model
that could add a server could send a secret header anywhere.

Who may use a server is its `access` (`may_use_server`), decided by the job's chat alone:

- `"owner"` (the default): the owner's private chat and the jobs it made (cron jobs, background
  tasks and their announcements) and the heartbeat, all of which carry the owner's chat id. A
  group is never the owner's, even when the owner speaks in it: what a tool returns there lands
  in the group's history, which every member reads and steers (any member can put instructions
  before the model), and a group's tool list must not change with who spoke (the provider's
  prompt cache is per request prefix). Without a known owner nobody is.
- `"allowed"`: every chat whose every participant may talk to the bot: the owner's, the private
  chat of a user id `ALLOW_FROM` lists, of a person the owner approved by pairing (checked
  when the job runs, so an approval taken back takes the tools with it), and a group whose own
  id `ALLOW_FROM` lists; with `*`, every chat. A group heard only because a listed member
  speaks in it is not: its other members read the answers. Usernames in `ALLOW_FROM` do not
  count (a username can pass to someone else, and a cron job carries no username).
- a list of chat ids: exactly those chats (people's user ids, groups' negative ids).

A server the job's chat may not use is not offered, not listed and not called: its tools are
unknown to that job, whatever the model names.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from nanobot_lambda.core.allowlist import Audience

SERVER_NAME = re.compile(r"^[a-z][a-z0-9_]{0,19}$")
# Where header secrets may live: SSM parameters under /PREFIX, Secrets Manager names under
# PREFIX (agent_turn may read those and no others).
SECRETS_PREFIX = "nanobot/mcp/"

ServerAccess = Literal["owner", "allowed"] | frozenset[int]
"""Who may use a server: the owner, everyone allowed, or these chat ids (see the module doc)."""


@dataclass(frozen=True)
class ServerPolicy:
    """What the operator set for a server besides where it is: who may use it, which of its
    tools (None: all), and how long one call may take."""

    access: ServerAccess = "owner"
    allowed_tools: frozenset[str] | None = None
    timeout_seconds: float = 30


def may_use_server(access: ServerAccess, chat_id: int | None, audience: Audience) -> bool:
    """Whether a job of this chat may see and call the tools of a server with this access.
    A job without a chat uses none."""
    if chat_id is None:
        return False
    if isinstance(access, frozenset):
        return chat_id in access
    if access == "allowed":
        return audience.allows_chat(chat_id)
    return audience.owner is not None and chat_id == audience.owner


@dataclass(frozen=True)
class RemoteTool:
    """A tool as its server describes it."""

    name: str
    description: str
    input_schema: dict[str, Any] = field(default_factory=dict)
    # The server says the tool only reads (its annotations' readOnlyHint): it runs without
    # asking a person first (core/approvals.py). A hint only: the server is the operator's.
    read_only: bool = False


@dataclass(frozen=True)
class RemoteResult:
    """What a call returned: its text (text parts, then structured content as JSON) and whether
    the server called it an error."""

    text: str
    is_error: bool = False


class RemoteToolServer(Protocol):
    """One MCP server. Failures (unreachable, slow, refusing, malformed) raise ToolError with a
    message for the model; nothing secret is ever in it."""

    @property
    def name(self) -> str: ...

    @property
    def timeout_seconds(self) -> float:
        """How long one call may take."""
        ...

    @property
    def allowed_tools(self) -> frozenset[str] | None:
        """The operator's allow-list of this server's tools; None: all of them."""
        ...

    @property
    def access(self) -> ServerAccess:
        """Which chats may use this server (`may_use_server`)."""
        ...

    def list_tools(self, timeout: float) -> list[RemoteTool]: ...

    def call(self, tool: str, arguments: dict[str, Any], timeout: float) -> RemoteResult: ...
