"""The sandbox's programs asked during agent_turn's init (issue 31), through the local Lambda
Invoke API and the real sandbox function: the first turn takes that answer without asking
again, and asks again itself when the early ask failed."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest

from nanobot_lambda.adapters.aws.sandbox import LambdaSandbox
from nanobot_lambda.core.errors import ToolError
from nanobot_lambda.operator.local.lambda_invoke import LocalLambdas
from tests.conftest import ROOT


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    lambdas = LocalLambdas()
    root = tmp_path_factory.mktemp("sandbox-root")
    app = ROOT / "functions" / "sandbox" / "app.py"
    lambdas.register("sandbox", app, {"SANDBOX_ROOT": str(root)}, timeout_seconds=60)
    lambdas.start()
    yield boto3.client(
        "lambda",
        endpoint_url=lambdas.url,
        region_name="us-east-1",
        aws_access_key_id="x",
        aws_secret_access_key="x",
    )
    lambdas.stop()


def invokes(client: Any) -> list[str]:
    sent: list[str] = []
    client.meta.events.register("before-send.lambda.Invoke", lambda **_: sent.append("Invoke"))
    return sent


def test_the_first_turn_takes_the_programs_asked_at_init(client: Any) -> None:
    sent = invokes(client)
    expected = LambdaSandbox("sandbox", client).programs()
    assert "python3" in expected
    sent.clear()

    early = LambdaSandbox("sandbox", client).ask_programs_early()
    assert early.programs() == expected
    assert early.programs() == expected  # later calls ask the sandbox, as they always did
    assert sent == ["Invoke", "Invoke"]  # the early ask, then the second call: none in between


def test_a_failed_early_ask_is_made_again_by_the_turn(client: Any) -> None:
    sent = invokes(client)
    early = LambdaSandbox("no-such-function", client).ask_programs_early()
    with pytest.raises(ToolError, match="could not be reached"):
        early.programs()
    assert len(sent) == 2
