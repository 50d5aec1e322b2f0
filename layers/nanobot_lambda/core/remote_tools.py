"""Tools of remote MCP servers (`MCP_SERVERS`), as the core sees them: a server lists its tools
and runs a call; the adapter (`adapters/mcp/`) speaks the protocol. Offering them to the model
is `tools/remote.py`'s.

The servers are the operator's to configure (a template parameter), never the model's: a model
that could add a server could send a secret header anywhere.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Protocol

SERVER_NAME = re.compile(r"^[a-z][a-z0-9_]{0,19}$")
# Where header secrets may live: SSM parameters under /PREFIX, Secrets Manager names under
# PREFIX (agent_turn may read those and no others).
SECRETS_PREFIX = "nanobot/mcp/"


@dataclass(frozen=True)
class RemoteTool:
    """A tool as its server describes it."""

    name: str
    description: str
    input_schema: dict[str, Any] = field(default_factory=dict)


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

    def list_tools(self, timeout: float) -> list[RemoteTool]: ...

    def call(self, tool: str, arguments: dict[str, Any], timeout: float) -> RemoteResult: ...
