"""The local Lambda Invoke API: a real boto3 client, each invocation in a fresh worker process."""

from __future__ import annotations

import json
import os
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
import yaml

from nanobot_lambda.functions.sandbox_confinement import is_dumpable
from nanobot_lambda.operator.local.cfn import load_template
from nanobot_lambda.operator.local.lambda_invoke import LocalLambdas, function_name
from nanobot_lambda.operator.local.stack import LocalStack
from tests.conftest import TEMPLATE, StackFactory
from tests.support.scripted_model import ScriptedModelServer

HANDLER = textwrap.dedent(
    """
    import os
    import time

    def handler(event, context):
        print("a log line, not part of the result")
        action = event.get("action")
        if action == "fail":
            raise ValueError("the sandbox refused: " + event["why"])
        if action == "sleep":
            time.sleep(event["seconds"])
        if action == "environ":
            return dict(os.environ)
        if action == "pid":
            return os.getpid()
        if action == "unjsonable":
            return {1, 2}
        return {"echo": event, "context": context}
    """
)


@pytest.fixture
def handler_file(tmp_path: Path) -> Path:
    path = tmp_path / "function" / "app.py"
    path.parent.mkdir()
    path.write_text(HANDLER, encoding="utf-8")
    return path


@pytest.fixture
def lambdas(handler_file: Path) -> Iterator[LocalLambdas]:
    server = LocalLambdas()
    server.register("sandbox", handler_file, {"SANDBOX_ROOT": "/nowhere"}, timeout_seconds=30)
    server.register("quick", handler_file, {}, timeout_seconds=1)
    server.start()
    yield server
    server.stop()


def client(lambdas: LocalLambdas) -> Any:
    return boto3.client(
        "lambda",
        endpoint_url=lambdas.url,
        region_name="us-east-1",
        aws_access_key_id="x",
        aws_secret_access_key="x",
    )


def invoke(lambdas: LocalLambdas, request: dict[str, Any], name: str = "sandbox") -> Any:
    return client(lambdas).invoke(
        FunctionName=name, InvocationType="RequestResponse", Payload=json.dumps(request).encode()
    )


def test_a_result_round_trips(lambdas: LocalLambdas) -> None:
    response = invoke(lambdas, {"code": "print(1)", "n": [1, 2.5, None]})

    assert response["StatusCode"] == 200
    assert "FunctionError" not in response
    assert response["ExecutedVersion"] == "$LATEST"
    assert json.loads(response["Payload"].read()) == {
        "echo": {"code": "print(1)", "n": [1, 2.5, None]},
        "context": None,
    }
    assert lambdas.invocations == ["sandbox"]


def test_a_handler_exception_is_an_unhandled_function_error(lambdas: LocalLambdas) -> None:
    response = invoke(lambdas, {"action": "fail", "why": "no"})

    assert response["StatusCode"] == 200
    assert response["FunctionError"] == "Unhandled"
    error = json.loads(response["Payload"].read())
    assert error["errorMessage"] == "the sandbox refused: no"
    assert error["errorType"] == "ValueError"


def test_a_result_that_is_not_json_is_a_function_error(lambdas: LocalLambdas) -> None:
    response = invoke(lambdas, {"action": "unjsonable"})

    assert response["FunctionError"] == "Unhandled"
    assert json.loads(response["Payload"].read())["errorType"] == "Runtime.MarshalError"


def test_a_function_is_stopped_at_its_timeout(lambdas: LocalLambdas) -> None:
    response = invoke(lambdas, {"action": "sleep", "seconds": 30}, name="quick")

    assert response["FunctionError"] == "Unhandled"
    assert "timed out after 1.00 seconds" in json.loads(response["Payload"].read())["errorMessage"]


def test_an_unknown_function_is_not_found(lambdas: LocalLambdas) -> None:
    lambda_client = client(lambdas)

    with pytest.raises(lambda_client.exceptions.ResourceNotFoundException):
        lambda_client.invoke(FunctionName="nope", Payload=b"{}")


def test_a_function_is_found_by_qualified_name_and_arn(lambdas: LocalLambdas) -> None:
    arn = "arn:aws:lambda:us-east-1:123456789012:function:sandbox"
    for name in ("sandbox:live", arn, f"{arn}:live"):
        response = invoke(lambdas, {"action": "pid"}, name=name)
        assert "FunctionError" not in response
    response = client(lambdas).invoke(FunctionName="sandbox", Qualifier="$LATEST", Payload=b"{}")
    assert "FunctionError" not in response
    assert function_name("123456789012:function:sandbox") == "sandbox"


def test_the_worker_sees_only_its_registered_environment(
    lambdas: LocalLambdas, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "parent-secret")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "parent-key")
    monkeypatch.setenv("LLM_API_KEY", "parent-model-key")

    environ = json.loads(invoke(lambdas, {"action": "environ"})["Payload"].read())

    assert environ["SANDBOX_ROOT"] == "/nowhere"
    assert "AWS_SECRET_ACCESS_KEY" not in environ
    assert "parent-secret" not in json.dumps(environ)
    assert set(environ) <= {"SANDBOX_ROOT", "PATH", "LANG"}  # not even HOME, as on Lambda


def test_each_invocation_is_a_fresh_process(lambdas: LocalLambdas) -> None:
    first = json.loads(invoke(lambdas, {"action": "pid"})["Payload"].read())
    second = json.loads(invoke(lambdas, {"action": "pid"})["Payload"].read())

    assert isinstance(first, int)
    assert first != second


# -- the local stack serves the template's SandboxFunction -----------------------------------


@pytest.fixture
def sandbox_template(tmp_path: Path, handler_file: Path) -> Path:
    """infra/template.yaml with its SandboxFunction (added if it has none) running the handler
    above, with a timeout of 7 s and a variable of its own (CloudFormation's long form)."""
    template = load_template(TEMPLATE)
    resources = template["Resources"]
    for spec in resources.values():
        # The copy lives elsewhere: the other functions' code is named by absolute path.
        properties = spec.get("Properties", {})
        if spec.get("Type") == "AWS::Serverless::Function" and "CodeUri" in properties:
            properties["CodeUri"] = str((TEMPLATE.parent / properties["CodeUri"]).resolve())
    sandbox = resources.setdefault("SandboxFunction", {"Type": "AWS::Serverless::Function"})
    sandbox["Properties"] = {
        **sandbox.get("Properties", {}),
        "CodeUri": str(handler_file.parent),
        "Handler": "app.handler",
        "Timeout": 7,
        "Environment": {"Variables": {"SANDBOX_BUCKET": {"Ref": "WorkspaceBucket"}}},
    }
    path = tmp_path / "infra" / "template.yaml"
    path.parent.mkdir()
    path.write_text(yaml.safe_dump(template, sort_keys=False), encoding="utf-8")
    return path


def test_the_local_stack_runs_the_sandbox_function(
    sandbox_template: Path, moto_endpoint: str, model_server: ScriptedModelServer
) -> None:
    before = os.environ.get("AWS_ENDPOINT_URL_LAMBDA")
    dumpable_before = is_dumpable()  # in-process runs of the unit tests may have cleared it
    stack = LocalStack(
        sandbox_template,
        model_env=model_server.env(),
        endpoint_url=moto_endpoint,
        parameters={"EnableSandbox": "true"},
    )
    with stack:
        assert stack.lambdas is not None
        assert stack.sandbox_root is not None and stack.sandbox_root.is_dir()
        name = stack.template.evaluate({"Ref": "SandboxFunction"})
        assert stack.lambdas.functions[name].timeout_seconds == 7
        if "SANDBOX_FUNCTION" in stack.environment["agent_turn"]:
            # agent_turn's `!Ref SandboxFunction`
            assert stack.environment["agent_turn"]["SANDBOX_FUNCTION"] == name
        # What agent_turn does: a lambda client from the environment the stack gives it.
        assert os.environ["AWS_ENDPOINT_URL_LAMBDA"] == stack.lambdas.url
        response = boto3.client("lambda").invoke(
            FunctionName=name,
            InvocationType="RequestResponse",
            Payload=json.dumps({"action": "environ"}).encode(),
        )
        assert "FunctionError" not in response
        environ = json.loads(response["Payload"].read())
        assert environ["SANDBOX_ROOT"] == str(stack.sandbox_root)
        assert environ["SANDBOX_BUCKET"] == stack.template.refs["WorkspaceBucket"]
        assert environ["POWERTOOLS_SERVICE_NAME"] == "nanobot"  # the template's Globals
        assert not [variable for variable in environ if variable.startswith("AWS_")]
        # This call, and agent_turn's init asking the sandbox for its programs (cold start).
        assert stack.lambdas.invocations[-1] == name and set(stack.lambdas.invocations) == {name}
        # The stack's process holds the caller's environment: closed to the sandbox's code.
        assert not is_dumpable()
        root = stack.sandbox_root
    assert is_dumpable() is dumpable_before
    assert not root.exists()
    assert stack.lambdas is None
    assert os.environ.get("AWS_ENDPOINT_URL_LAMBDA") == before


def test_the_local_stack_starts_without_the_sandbox(stack_factory: StackFactory) -> None:
    template = load_template(TEMPLATE)
    if "EnableSandbox" not in template.get("Parameters", {}):
        pytest.skip("the template has no EnableSandbox parameter")

    stack = stack_factory(EnableSandbox="false")

    assert stack.lambdas is None
    assert "AWS_ENDPOINT_URL_LAMBDA" not in os.environ
