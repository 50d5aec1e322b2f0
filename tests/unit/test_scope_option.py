"""`--scope` of `workspace pull|push`: what names a scope, and that nothing else does."""

from __future__ import annotations

import pytest

from nanobot_lambda.adapters.aws.workspace import SCOPES_PREFIX, WORKSPACE_PREFIX
from nanobot_lambda.core.scopes import OWNER, Scope, scope_of_chat
from nanobot_lambda.operator.ops.deployment import OperatorError
from nanobot_lambda.operator.ops.workspace_sync import (
    describe_prefix,
    parse_scope,
    workspace_prefix,
)


@pytest.mark.parametrize(
    ("value", "scope"),
    [
        ("people/222222222", "people/222222222"),
        ("222222222", "people/222222222"),
        ("groups/1001234567890", "groups/1001234567890"),
        ("groups/-1001234567890", "groups/1001234567890"),
        ("-1001234567890", "groups/1001234567890"),
        ("groups/-42", "groups/42"),  # a basic group's chat id
        ("people/0007", "people/7"),  # written canonically: one prefix per id
    ],
)
def test_the_forms_that_name_a_scope(value: str, scope: str) -> None:
    assert parse_scope(value) == Scope(scope)


@pytest.mark.parametrize("chat_id", [222222222, -1001234567890, -42])
def test_a_bare_chat_id_is_the_scope_that_chat_works_in(chat_id: int) -> None:
    owner = 111111111
    assert parse_scope(str(chat_id)) == scope_of_chat(chat_id, owner)


@pytest.mark.parametrize(
    "value",
    [
        "people/../x",
        "people/2/../../workspace",
        "people/abc",
        "groups/",
        "people/",
        "../workspace",
        "people/1/2",
        "people/-2",
        "groups/--2",
        "people/0",
        "0",
        "-0",
        "groups/-0",
        "people/2/",
        "/people/2",
        "people//2",
        "people/2\n",
        " people/2",
        "people/+2",
        "people/2.0",
        "people/1e9",
        "people/\u0662",  # an Arabic-Indic digit: int() would take it
        "people/\uff12",  # a fullwidth digit
        "People/2",
        "persons/2",
        "scopes/people/2",
        "workspace",
        "owner",
        "",
        "-",
        "people/" + "9" * 21,
    ],
)
def test_everything_else_is_refused_naming_the_accepted_forms(value: str) -> None:
    with pytest.raises(OperatorError) as refused:
        parse_scope(value)
    assert "people/<user id>, groups/<chat id>" in str(refused.value)
    assert repr(value) in str(refused.value)


def test_whatever_is_accepted_stays_under_its_own_prefix() -> None:
    for value in ("people/222222222", "-1001234567890", "groups/-5", "people/" + "9" * 20):
        prefix = workspace_prefix(parse_scope(value))
        kind, number, empty = prefix[len(SCOPES_PREFIX) :].split("/")
        assert prefix.startswith(SCOPES_PREFIX)
        assert kind in ("people", "groups")
        assert number.isascii() and number.isdigit() and not number.startswith("0")
        assert empty == ""


def test_the_owners_workspace_keeps_its_prefix() -> None:
    assert workspace_prefix(OWNER) == WORKSPACE_PREFIX
    assert describe_prefix(WORKSPACE_PREFIX) == "the owner's workspace (workspace/)"
    assert describe_prefix("scopes/people/2/") == "scope people/2 (scopes/people/2/)"
