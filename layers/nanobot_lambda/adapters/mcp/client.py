"""A remote MCP server over streamable HTTP, through the maintained SDK's client (`mcp`).

Each operation (listing the tools, one call) opens a session, does its work and closes it: a
Lambda container is frozen between invocations, and a connection or a server's session kept
across a freeze would go stale. The SDK is async; `anyio.run` runs each operation from the
synchronous turn. `mcp` is imported on first use (it costs about a second and brings the SDK's
server side along), so a deployment without MCP servers never loads it.

Before connecting, the URL's host is checked by the web tools' address guard: private, loopback
and cloud-metadata addresses only through `WEB_FETCH_ALLOW_NETWORKS`. Header values read from a
secret go to the server only (and only for jobs of the chats its `access` names: the server is
not asked for another's, tools/remote.py), are added to the redactor, and no error message
carries them (errors are described by their type and the server's name).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from nanobot_lambda.adapters.web.netguard import AddressGuard, FetchError, IPNetwork
from nanobot_lambda.core.errors import ToolError
from nanobot_lambda.core.redaction import REDACTOR
from nanobot_lambda.core.remote_tools import RemoteResult, RemoteTool, ServerAccess, ServerPolicy

if TYPE_CHECKING:
    from mcp import ClientSession

    from nanobot_lambda.settings import McpServerConfig

logger = logging.getLogger(__name__)

T = TypeVar("T")
MAX_LISTED_TOOLS = 100  # per server: a tool list is sent with every request


class McpServer:
    """The `RemoteToolServer` port for one configured server."""

    def __init__(
        self,
        name: str,
        url: str,
        headers: Mapping[str, str],
        guard: AddressGuard,
        policy: ServerPolicy | None = None,
    ) -> None:
        self._name = name
        self._url = url
        self._headers = dict(headers)
        self._guard = guard
        self._policy = policy or ServerPolicy()  # the owner's, every tool, 30 s a call

    @property
    def name(self) -> str:
        return self._name

    @property
    def timeout_seconds(self) -> float:
        return self._policy.timeout_seconds

    @property
    def allowed_tools(self) -> frozenset[str] | None:
        return self._policy.allowed_tools

    @property
    def access(self) -> ServerAccess:
        return self._policy.access

    def list_tools(self, timeout: float) -> list[RemoteTool]:
        async def listing(session: ClientSession) -> list[RemoteTool]:
            from mcp import types

            found: list[RemoteTool] = []
            cursor: str | None = None
            while len(found) < MAX_LISTED_TOOLS:
                params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
                page = await session.list_tools(params=params)
                for tool in page.tools:
                    schema = tool.input_schema if isinstance(tool.input_schema, dict) else {}
                    hints = tool.annotations
                    read_only = hints is not None and hints.read_only_hint is True
                    found.append(
                        RemoteTool(tool.name, tool.description or "", dict(schema), read_only)
                    )
                cursor = page.next_cursor
                if not cursor:
                    break
            return found[:MAX_LISTED_TOOLS]

        return self._session(listing, timeout, "listing its tools")

    def call(self, tool: str, arguments: dict[str, Any], timeout: float) -> RemoteResult:
        async def calling(session: ClientSession) -> RemoteResult:
            result = await session.call_tool(tool, arguments)
            return RemoteResult(_text(result), bool(result.is_error))

        return self._session(calling, timeout, f"calling {tool}")

    def _session(
        self, work: Callable[[ClientSession], Awaitable[T]], timeout: float, doing: str
    ) -> T:
        try:
            self._guard.check(self._url)
        except FetchError as error:
            raise ToolError(f"the MCP server {self._name} cannot be reached: {error}") from None
        import anyio

        try:
            return anyio.run(self._open_and, work, timeout)
        except ToolError:
            raise
        except BaseException as error:  # an ExceptionGroup from the SDK's task group, too
            cause = _innermost(error)
            if isinstance(cause, KeyboardInterrupt | SystemExit):
                raise
            kind = type(cause).__name__
            logger.warning(
                "MCP server failed", extra={"mcp_server": self._name, "error": kind, "doing": doing}
            )
            if "Timeout" in kind or "timed out" in str(cause):
                raise ToolError(
                    f"the MCP server {self._name} did not answer in time ({doing}); try again "
                    "later or do without it"
                ) from None
            raise ToolError(
                f"the MCP server {self._name} failed ({doing}: {kind}); try again later or do "
                "without it"
            ) from None

    async def _open_and(self, work: Callable[[ClientSession], Awaitable[T]], timeout: float) -> T:
        import anyio
        import httpx2
        from mcp import ClientSession
        from mcp.client.streamable_http import streamable_http_client

        with anyio.fail_after(timeout):
            async with (
                httpx2.AsyncClient(
                    headers=self._headers,
                    timeout=httpx2.Timeout(timeout),
                    follow_redirects=False,
                    transport=_guarded_transport(self._guard),
                ) as http,
                streamable_http_client(self._url, http_client=http) as (read, write),
                ClientSession(read, write, read_timeout_seconds=timeout) as session,
            ):
                await session.initialize()
                return await work(session)


def _guarded_transport(guard: AddressGuard) -> Any:
    """httpx2's transport, connecting only to an address the guard checked when the connection
    is made: the name is resolved once, by the guard, so DNS rebinding cannot steer a connection
    inside (TLS still verifies the name)."""
    import httpcore2
    import httpx2

    class GuardedBackend(httpcore2.AnyIOBackend):
        async def connect_tcp(self, host: str, port: int, *args: Any, **kwargs: Any) -> Any:
            try:
                target = guard.check(f"https://{_bracketed(host)}:{port}/")
            except FetchError as error:
                raise httpcore2.ConnectError(str(error)) from None
            return await super().connect_tcp(target.addresses[0], port, *args, **kwargs)

    transport = httpx2.AsyncHTTPTransport()
    transport._pool = httpcore2.AsyncConnectionPool(  # the default pool, with that backend
        ssl_context=httpx2.create_ssl_context(), network_backend=GuardedBackend()
    )
    return transport


def _bracketed(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def _text(result: Any) -> str:
    """A call's result as text: its text parts, other parts named, then structured content."""
    import json

    parts: list[str] = []
    for item in result.content or []:
        kind = getattr(item, "type", "")
        if kind == "text":
            parts.append(str(item.text))
        elif kind == "resource" and hasattr(getattr(item, "resource", None), "text"):
            parts.append(str(item.resource.text))
        else:
            parts.append(f"[{kind or 'content'} not shown]")
    structured = getattr(result, "structured_content", None)
    if structured is not None and not parts:
        parts.append(json.dumps(structured, ensure_ascii=False))
    return "\n".join(parts)


def _innermost(error: BaseException) -> BaseException:
    """The first leaf of nested exception groups (the SDK's failures arrive wrapped)."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    return error


def mcp_servers(
    configs: Sequence[McpServerConfig],
    allow_networks: Sequence[IPNetwork],
    fetch: Callable[[str, str], str],
) -> tuple[McpServer, ...]:
    """The configured servers, their header secrets read (once, at start-up) with `fetch`."""
    guard = AddressGuard(allow_networks)
    servers = []
    for config in configs:
        headers: dict[str, str] = {}
        for header, value in config.headers.items():
            if isinstance(value, str):
                headers[header] = value  # written out in the configuration: no secret
                continue
            headers[header] = fetch(*next(iter(value.items())))
            REDACTOR.add([headers[header]])  # from now on, out of every log and tool result
        allowed = frozenset(config.tools) if config.tools is not None else None
        policy = ServerPolicy(config.access, allowed, config.timeout_seconds)
        servers.append(McpServer(config.name, config.url, headers, guard, policy))
    return tuple(servers)
