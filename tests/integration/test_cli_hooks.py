"""`nanobot-lambda hooks list|add|remove` and the reactions of `usage --chat`, against a stack's
sessions table (moto server)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from nanobot_lambda.adapters.aws.clients import dynamodb_client
from nanobot_lambda.adapters.aws.inbound_events import DynamoHookStore
from nanobot_lambda.adapters.aws.reactions_and_edits import DynamoFeedbackBook
from nanobot_lambda.core.reactions_and_edits import Reaction
from nanobot_lambda.operator.cli import main
from nanobot_lambda.operator.local.cfn import TemplateContext
from nanobot_lambda.operator.local.state import LocalStackInfo

HOOKS_URL = "https://abc123.execute-api.eu-west-1.amazonaws.com/hooks"


@pytest.fixture
def table(resources: TemplateContext, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("SESSIONS_TABLE", resources.refs["SessionsTable"])
    monkeypatch.setenv("HOOKS_URL", HOOKS_URL)
    return resources.refs["SessionsTable"]


def test_add_prints_the_secret_once_list_never_and_remove_stops_the_url(
    table: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["hooks", "add", "github", "--chat", "111111111"]) == 0
    out = capsys.readouterr().out
    match = re.search(r"secret: (\S+)  \(shown only now\)", out)
    assert match is not None and f"url:    {HOOKS_URL}/github" in out
    stored = DynamoHookStore(table, dynamodb_client).hook("github")
    assert stored is not None and stored.secret.get_secret_value() == match.group(1)

    assert main(["hooks", "add", "uptime", "--chat", "-100123", "--topic", "7", "--quiet"]) == 0
    capsys.readouterr()
    assert main(["hooks", "list"]) == 0
    listed = capsys.readouterr().out
    assert f"github  chat 111111111  {HOOKS_URL}/github" in listed
    assert f"uptime  chat -100123 topic 7  quiet  {HOOKS_URL}/uptime" in listed
    assert match.group(1) not in listed

    assert main(["hooks", "add", "github", "--chat", "1"]) == 1
    assert "a hook named github exists" in capsys.readouterr().err
    assert main(["hooks", "remove", "github"]) == 0
    assert main(["hooks", "remove", "github"]) == 1
    assert "no hook named 'github'" in capsys.readouterr().err
    assert DynamoHookStore(table, dynamodb_client).hook("github") is None


@pytest.mark.parametrize("name", ["GitHub", "a/b", "1x", "x" * 33, "ci_x"])
def test_an_odd_name_is_refused_and_nothing_is_made(
    table: str, name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["hooks", "add", name, "--chat", "1"]) == 2
    assert "is no hook name: 1-32 lowercase letters" in capsys.readouterr().err
    assert DynamoHookStore(table, dynamodb_client).hooks() == []


def test_usage_of_a_chat_shows_the_reactions_to_its_answers(
    table: str, capsys: pytest.CaptureFixture[str]
) -> None:
    book = DynamoFeedbackBook(table, dynamodb_client)
    book.record_answers(111111111, [11, 13])
    book.record_answers(222222222, [11])
    book.record_reaction(Reaction(111111111, 11, 111111111, ("👍",), 1))
    book.record_reaction(Reaction(111111111, 12, 111111111, ("🔥",), 1))  # the person's own
    book.record_reaction(Reaction(111111111, 13, 111111111, ("👍",), 2))
    book.record_reaction(Reaction(222222222, 11, 222222222, ("👎",), 1))
    assert main(["usage", "--chat", "111111111"]) == 0
    assert capsys.readouterr().out.strip().endswith("Reactions to answers: 👍 2")


def test_local_acts_on_the_running_chat_s_hooks_with_its_url_on_this_machine(
    resources: TemplateContext,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    """`hooks … --local` (issue 37: refused as an unknown argument): the sessions table and the
    hooks' URL the chat announced, none of the environment's (a deployed stack's in .env)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setenv("SESSIONS_TABLE", "deployed-sessions")
    monkeypatch.setenv("HOOKS_URL", HOOKS_URL)
    local_url = "http://127.0.0.1:43210/hooks"
    LocalStackInfo.of(resources, os.environ["AWS_ENDPOINT_URL"], "us-east-1", local_url).announce()

    assert main(["hooks", "add", "deploys", "--chat", "100000001", "--local"]) == 0
    assert f"url:    {local_url}/deploys" in capsys.readouterr().out
    assert main(["hooks", "list", "--local"]) == 0
    assert f"deploys  chat 100000001  {local_url}/deploys" in capsys.readouterr().out
    table = resources.refs["SessionsTable"]
    assert DynamoHookStore(table, dynamodb_client).hook("deploys") is not None
    assert main(["hooks", "remove", "deploys", "--local"]) == 0
    assert DynamoHookStore(table, dynamodb_client).hooks() == []
