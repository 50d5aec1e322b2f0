"""Approvals: before a call that cannot be taken back runs, a person is asked.

Every tool call the model makes is ruled on here, in one place, before it runs (the agent loop
asks its gate: functions/agent_turn/approval_gate.py): `allow` (it runs), `ask` (the turn records
the call, asks its approver with buttons and ends; a press resumes it), or `deny` (the model is
told, nothing runs).

What the operator set (`APPROVALS`: `web_fetch=allow,mcp:github=ask,mcp:github/create_issue=allow`
or the same as a JSON object) comes first, the most specific key winning: `mcp:<server>/<tool>`,
then `mcp:<server>`, then the tool's name. Otherwise the defaults a careful owner would choose:

- an MCP tool asks, unless its server says `readOnlyHint: true` in the tool's annotations;
- a message to a chat other than the turn's own asks;
- a write to the files shared by every scope (AGENTS.md, SOUL.md, TOOLS.md, IDENTITY.md,
  skills/) asks (only the owner's scope may write them at all);
- after untrusted content entered the turn (a fetched page, a search result, a document, an
  MCP result, a hook's payload), a call that carries data out to a host or chat not already
  part of the conversation asks: web_fetch to a new host with a path or query, an MCP tool that
  writes, a message to another chat;
- everything else is allowed: an ordinary turn never asks.

A standing permission ("Always allow here": one per action and scope) lifts a default's
question, but not the question after untrusted content: what an injected page steers is asked
about every time. The operator's own `allow` is never asked about.

Whose decision it is (`Ruling.approver`): the owner's for what is shared (an MCP server, another
chat, the shared files) and for anything in a group; a private chat's own person for the rest
of their own scope. Nobody else's press counts.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, Protocol
from urllib.parse import urlsplit

from nanobot_lambda.core.paths import PathError, normalize_path
from nanobot_lambda.core.scopes import is_shared

Policy = Literal["allow", "ask", "deny"]
POLICIES: tuple[Policy, ...] = ("allow", "ask", "deny")
# How a waiting call was decided: allowed once, allowed here for good, denied by the approver,
# not answered in time, or denied because the person wrote again meanwhile.
Decision = Literal["once", "always", "deny", "timeout", "moved_on"]
# What each button's press means (callback data `apv:<approval id>:<letter>`).
BUTTON_DECISIONS: dict[str, Decision] = {"o": "once", "a": "always", "d": "deny"}
CALLBACK_PREFIX = "apv:"
APPROVAL_ID = re.compile(r"^[A-Za-z0-9_-]{8,40}$")

# Tools whose results are content from outside (the web, a document): untrusted.
UNTRUSTED_RESULTS = frozenset({"web_fetch", "web_search"})
_KEY = re.compile(r"^(mcp:[a-z][a-z0-9_]{0,19}(/[A-Za-z0-9_.-]{1,64})?|[a-z][a-z0-9_]{0,63})$")

Reason = Literal["", "mcp_write", "other_chat", "shared_file", "untrusted_out"]


class RulesError(ValueError):
    """APPROVALS is not a list of `action=allow|ask|deny`."""


def parse_rules(text: str) -> dict[str, Policy]:
    """APPROVALS: a JSON object, or the short form `key=policy,key=policy`. Raises RulesError."""
    text = text.strip()
    if not text:
        return {}
    pairs: Iterable[tuple[Any, Any]]
    if text.startswith("{"):
        try:
            loaded = json.loads(text)
        except ValueError as error:
            raise RulesError(f"APPROVALS is not valid JSON ({error})") from None
        if not isinstance(loaded, dict):
            raise RulesError("APPROVALS must be a JSON object")
        pairs = loaded.items()
    else:
        pairs = [(key, policy) for key, _, policy in (p.partition("=") for p in text.split(","))]
    rules: dict[str, Policy] = {}
    for key, policy in pairs:
        key, policy = str(key).strip(), str(policy).strip().lower()
        if not _KEY.match(key):
            raise RulesError(
                f"APPROVALS: {key!r} names no tool (a tool, mcp:SERVER, mcp:SERVER/TOOL)"
            )
        if policy not in POLICIES:
            raise RulesError(f"APPROVALS: {key} must be allow, ask or deny, not {policy!r}")
        rules[key] = POLICIES[POLICIES.index(policy)]
    return rules


@dataclass(frozen=True)
class Call:
    """What the policy reads of a call: the model's tool name and arguments, and for an MCP
    tool its server, its own name and whether its server says it only reads."""

    tool: str
    arguments: Mapping[str, Any]
    server: str | None = None
    remote_tool: str | None = None
    read_only: bool = False

    @property
    def action(self) -> str:
        """The action a rule or a standing permission names."""
        if self.server is not None:
            return f"mcp:{self.server}/{self.remote_tool}"
        return self.tool

    @property
    def keys(self) -> tuple[str, ...]:
        """The rule keys that apply, the most specific first."""
        if self.server is not None:
            return (self.action, f"mcp:{self.server}", self.tool)
        return (self.tool,)


@dataclass(frozen=True)
class TurnFacts:
    """What the policy reads of the turn: its chat, the owner, whether untrusted content
    entered it, and the hosts its conversation already names (a person's own words)."""

    chat_id: int
    owner: int | None
    untrusted: bool = False
    known_hosts: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Ruling:
    """The policy's answer for one call: what to do, why (a default's reason; "" when a rule
    of the operator's or nothing applies), and who decides when it asks (None: nobody can)."""

    policy: Policy
    reason: Reason = ""
    approver: int | None = None


class ApprovalPolicy:
    """The operator's rules over the defaults (see the module's docstring)."""

    def __init__(self, rules: Mapping[str, Policy] | None = None) -> None:
        self._rules = dict(rules or {})

    def rule(self, call: Call, turn: TurnFacts, standing: Callable[[str], bool]) -> Ruling:
        """Rule on `call` in `turn`; `standing(action)`: whether the approver said "always
        allow" for it in this scope (asked only when a default would ask)."""
        configured = next((self._rules[key] for key in call.keys if key in self._rules), None)
        reason = default_reason(call, turn)
        shared = call.server is not None or reason in ("other_chat", "shared_file")
        approver = approver_of(turn, shared=shared)
        if configured is not None:
            return Ruling(configured, reason, approver)
        if not reason:
            return Ruling("allow")
        if reason != "untrusted_out" and standing(call.action):
            return Ruling("allow", reason, approver)
        return Ruling("ask", reason, approver)


def default_reason(call: Call, turn: TurnFacts) -> Reason:
    """Why the defaults would ask about `call` ("" when they would not): taint first."""
    arguments = call.arguments
    if turn.untrusted and carries_data_out(call, turn):
        return "untrusted_out"
    if call.server is not None:
        return "" if call.read_only else "mcp_write"
    # Only the owner's chat may message another chat, or write the shared files: elsewhere
    # the tools refuse it anyway (tools/chat.py, core/scopes.py), and nothing is asked.
    owners = turn.owner is None or turn.chat_id == turn.owner
    if call.tool == "message" and owners and _other_chat(arguments, turn.chat_id):
        return "other_chat"
    if call.tool in ("write_file", "edit_file") and owners and _shared_path(arguments.get("path")):
        return "shared_file"
    return ""


def carries_data_out(call: Call, turn: TurnFacts) -> bool:
    """Whether `call` may carry what the turn holds to a host or chat not already part of the
    conversation: web_fetch to a new host with a path or query, an MCP tool that writes, a
    message to another chat."""
    if call.server is not None:
        return not call.read_only
    if call.tool == "message":
        return _other_chat(call.arguments, turn.chat_id)
    if call.tool == "web_fetch":
        url = call.arguments.get("url")
        if not isinstance(url, str):
            return False
        parts = urlsplit(url.strip())
        host = (parts.netloc or "").lower()
        carries = parts.path not in ("", "/") or bool(parts.query) or bool(parts.fragment)
        return carries and host not in turn.known_hosts
    return False


def approver_of(turn: TurnFacts, *, shared: bool) -> int | None:
    """Who decides: a private chat's own person for their own scope; the owner for what is
    shared and for groups (None: no owner is known, nobody can)."""
    if not shared and turn.chat_id > 0 and (turn.owner is None or turn.chat_id != turn.owner):
        return turn.chat_id
    return turn.owner


def target_of(call: Call) -> str:
    """What the call acts on, in words for the question: an MCP server, a chat, a host, a
    file (empty when its tool names none)."""
    arguments = call.arguments
    if call.server is not None:
        return f"the MCP server {call.server}"
    if call.tool == "message":
        target = arguments.get("chat_id")
        return f"chat {target}" if isinstance(target, int) else "this chat"
    if call.tool == "web_fetch" and isinstance(arguments.get("url"), str):
        return urlsplit(str(arguments["url"]).strip()).netloc or str(arguments["url"])
    path = arguments.get("path")
    return path if isinstance(path, str) else ""


def _shared_path(path: object) -> bool:
    try:
        return is_shared(normalize_path(path))
    except PathError:
        return False  # the tool refuses it anyway


def _other_chat(arguments: Mapping[str, Any], chat_id: int) -> bool:
    target = arguments.get("chat_id")
    return isinstance(target, int) and target != chat_id


_URL = re.compile(r"https?://([^\s/?#<>\"']+)", re.IGNORECASE)


def hosts_named(texts: Iterable[str]) -> frozenset[str]:
    """The hosts (host[:port], lower case) the URLs in `texts` name."""
    return frozenset(match.group(1).lower() for text in texts for match in _URL.finditer(text))


def callback_data(approval_id: str, decision: str) -> str:
    """A button's data: `apv:<approval id>:<o|a|d>` (within Telegram's 64 bytes)."""
    return f"{CALLBACK_PREFIX}{approval_id}:{decision}"


def parse_callback(data: str | None) -> tuple[str, Decision] | None:
    """(approval id, decision) of an approval button's data; None for anything else."""
    if not data or not data.startswith(CALLBACK_PREFIX):
        return None
    approval_id, _, letter = data[len(CALLBACK_PREFIX) :].rpartition(":")
    decision = BUTTON_DECISIONS.get(letter)
    if decision is None or not APPROVAL_ID.match(approval_id):
        return None
    return approval_id, decision


@dataclass(frozen=True)
class Pending:
    """A call waiting for a person, as the turn's journal records it (core/journal.py): which
    call, the approval's random id, who decides, until when (ISO 8601, UTC), the action and the
    scope a standing permission would be for, and once decided, how, by whom and when."""

    call_id: str
    approval_id: str
    approver: int
    deadline: str
    action: str
    scope: str
    reason: str = ""  # the default's (Reason), shown in the question
    decision: Decision | None = None
    decided_by: int | None = None
    decided_by_name: str | None = None
    decided_at: str | None = None

    def as_record(self) -> dict[str, Any]:
        return {key: value for key, value in vars(self).items() if value is not None}

    @classmethod
    def of_record(cls, record: Mapping[str, Any]) -> Pending:
        return cls(**{key: record[key] for key in cls.__dataclass_fields__ if key in record})


@dataclass(frozen=True)
class Approval:
    """What a press or the deadline is checked against (the webhook and the scheduler read it,
    the turn writes it when it asks): the turn waiting, its queue group, who decides and until
    when (epoch seconds), the message that asks (once known), and the turn's job as queued
    (JSON), which the resume job carries."""

    approval_id: str
    session_key: str
    turn_id: str
    chat_id: int  # the turn's chat
    approver: int  # also the private chat the question was sent to
    deadline: int
    job: str
    message_id: int | None = None


@dataclass(frozen=True)
class Permission:
    """A standing permission: `action` runs without asking in `scope` (its name: "" for the
    owner's), granted by a press of "Always allow here"."""

    scope: str
    action: str
    granted_by: int
    granted_at: str


class ApprovalBook(Protocol):
    """The approvals asked for, and the standing permissions (adapters/aws/approvals.py)."""

    def put(self, approval: Approval) -> None:
        """Record an approval asked for; one recorded before (by an earlier run) is kept."""
        ...

    def get(self, approval_id: str) -> Approval | None: ...

    def note_message(self, approval_id: str, message_id: int) -> None:
        """The message that asks, once it was sent."""
        ...

    def allow_always(self, permission: Permission) -> None: ...

    def allowed(self, scope: str, action: str) -> bool: ...

    def permissions(self) -> list[Permission]:
        """Every standing permission, in the order `/approvals` lists them."""
        ...

    def revoke(self, scope: str, action: str) -> None: ...


class ApprovalDeadlines(Protocol):
    """A one-time schedule at an approval's deadline, which queues its "timed out" resume
    (adapters/aws/schedules.py)."""

    def set(self, approval_id: str, at: datetime) -> None:
        """Schedule it; one that exists already (an earlier run's) is not an error."""
        ...
