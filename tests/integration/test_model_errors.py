"""A failed model call says what it was, over real HTTP: a setup problem the owner must fix
(`ModelError.permanent`), a failure that may pass, a server that is not there.

The OpenAI-compatible stand-in (`scripted_model`) answers the statuses; a Bedrock stand-in
answers Bedrock's two 403s (no model access, no IAM permission) in Bedrock's own words.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from nanobot_lambda.adapters.llm.litellm_model import LitellmChatModel
from nanobot_lambda.adapters.llm.model_errors import model_name_problem, model_name_problems
from nanobot_lambda.core.errors import ModelError
from nanobot_lambda.core.model import CompletionRequest
from nanobot_lambda.settings import LlmSettings
from tests.support.bedrock_refusals import NO_ACCESS, NOT_AUTHORIZED, BedrockRefusals
from tests.support.scripted_model import ScriptedModelServer

HELLO = [{"role": "user", "content": "hi"}]


def model_for(server: ScriptedModelServer, **extra: str) -> LitellmChatModel:
    settings = LlmSettings.model_validate(
        {**server.env(api_key="sk-test-123"), "LLM_NUM_RETRIES": "0", **extra}
    )
    return LitellmChatModel(settings)


def failure(model: LitellmChatModel) -> ModelError:
    with pytest.raises(ModelError) as raised:
        model.complete(CompletionRequest(HELLO, []))
    return raised.value


@pytest.mark.parametrize(
    ("status", "words"),
    [
        (401, "refused the API key (401)"),
        (403, "refused access to the model (403)"),
        (404, "knows no such model (404)"),
        (402, "refused the request (402)"),  # e.g. no credit left
    ],
)
def test_a_refusal_no_retry_cures_is_a_setup_problem(
    model_server: ScriptedModelServer, status: int, words: str
) -> None:
    model_server.fail(status).reply("never asked")
    error = failure(model_for(model_server, LLM_NUM_RETRIES="2"))
    assert error.permanent
    assert error.setup_problem is not None
    assert error.setup_problem.startswith("openai/scripted: ") and words in error.setup_problem
    assert len(model_server.requests) == 1  # not retried either
    model_server.steps.clear()


@pytest.mark.parametrize("status", [408, 409, 413, 429, 500, 503])
def test_a_failure_that_may_pass_is_no_setup_problem(
    model_server: ScriptedModelServer, status: int
) -> None:
    model_server.fail(status)
    error = failure(model_for(model_server))
    assert not error.permanent and error.setup_problem is None
    assert f"status {status}" in str(error)


def test_a_request_too_long_for_the_model_is_no_setup_problem(
    model_server: ScriptedModelServer,
) -> None:
    model_server.fail(400)  # the stand-in's 400 says the context window was exceeded
    error = failure(model_for(model_server))
    assert not error.permanent
    assert "status 400" in str(error)


def test_a_fallback_that_may_still_answer_makes_it_no_setup_problem(
    model_server: ScriptedModelServer,
) -> None:
    """A refused primary with a fallback that failed only for now: trying again may work."""
    model_server.fail(401).fail(500)
    error = failure(model_for(model_server, LLM_FALLBACK_MODELS="openai/other"))
    assert not error.permanent
    assert "openai/scripted: AuthenticationError (status 401)" in str(error)
    assert "openai/other: InternalServerError (status 500)" in str(error)

    model_server.fail(401).fail(404)
    error = failure(model_for(model_server, LLM_FALLBACK_MODELS="openai/other"))
    assert error.permanent and error.setup_problem is not None
    assert error.setup_problem.startswith("openai/scripted: ")  # the owner's model first


def test_a_model_name_without_a_provider_is_a_setup_problem_before_any_request(
    model_server: ScriptedModelServer,
) -> None:
    error = failure(model_for(model_server, LLM_MODEL="fake"))
    assert error.permanent and error.setup_problem is not None
    assert "fake: the model name names no provider" in error.setup_problem
    assert "openai/…, anthropic/…, bedrock/…" in error.setup_problem
    assert model_server.requests == []


def test_a_model_name_is_checked_without_a_request() -> None:
    """What `chat` and `doctor` check at start: litellm's provider lookup, no network."""
    assert model_name_problem("openai/gpt-4o-mini") is None
    assert model_name_problem("bedrock/us.anthropic.claude-sonnet-4-5-20250929-v1:0") is None
    assert model_name_problem("gpt-4o-mini") is None  # a bare OpenAI model litellm knows
    problem = model_name_problem("fake")
    assert problem is not None and problem.startswith("fake: ")
    settings = LlmSettings.model_validate(
        {
            "LLM_MODEL": "openai/gpt-4o-mini",
            "LLM_FALLBACK_MODELS": "anthropic/claude-sonnet-4-5,llama3",
            "HEARTBEAT_MODEL": "cheap",
        }
    )
    assert [variable for variable, _ in model_name_problems(settings)] == [
        "LLM_FALLBACK_MODELS",
        "HEARTBEAT_MODEL",
    ]


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])  # closed again when the block ends


def test_a_refused_connection_says_so_with_the_address_and_names_the_model_once() -> None:
    base = f"http://127.0.0.1:{closed_port()}/v1"
    settings = LlmSettings.model_validate(
        {
            "LLM_MODEL": "openai/local-model",
            "LLM_API_BASE": base,
            "LLM_API_KEY": "x",
            "LLM_NUM_RETRIES": "0",
        }
    )
    error = failure(LitellmChatModel(settings))
    assert str(error) == (
        f"openai/local-model: connection refused at {base} (is the server running?)"
    )
    assert not error.permanent  # the server may be started


def test_a_short_placeholder_key_is_not_masked_in_the_description(
    model_server: ScriptedModelServer,
) -> None:
    """`LLM_API_KEY=x` (a local server needs none): the description keeps every x, the kind's
    name whole; a real key is masked as a whole value."""
    model_server.fail(401)
    error = failure(model_for(model_server, LLM_API_KEY="x"))
    assert str(error) == (
        "openai/scripted: AuthenticationError (status 401): OpenAIException - scripted failure"
    )  # the kind once (litellm says it twice), every x kept


@pytest.fixture
def aws_credentials(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Made-up credentials: the stand-in checks no signature, litellm signs all the same."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAEXAMPLEEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "made-up-secret-access-key")
    monkeypatch.setenv("AWS_REGION_NAME", "us-east-1")
    monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)
    yield


@pytest.mark.usefixtures("aws_credentials")
@pytest.mark.parametrize(
    ("message", "words"),
    [
        (NO_ACCESS, "has no access to the model in Bedrock (403)"),
        (NOT_AUTHORIZED, "may not invoke the model (bedrock:InvokeModel, 403)"),
    ],
)
def test_bedrocks_two_refusals_are_told_apart(message: str, words: str) -> None:
    server = BedrockRefusals(message).start()
    try:
        settings = LlmSettings.model_validate(
            {
                "LLM_MODEL": "bedrock/converse/anthropic.claude-sonnet-4-5-v1:0",
                "LLM_API_BASE": server.url,
                "LLM_NUM_RETRIES": "0",
            }
        )
        error = failure(LitellmChatModel(settings))
    finally:
        server.stop()
    assert server.paths, "litellm never reached the stand-in"
    assert error.permanent and error.setup_problem is not None
    assert words in error.setup_problem
    other = NOT_AUTHORIZED if message == NO_ACCESS else NO_ACCESS
    fixes = {NO_ACCESS: "Model access page", NOT_AUTHORIZED: "BedrockModelArns"}
    assert fixes[message] in error.setup_problem
    assert fixes[other] not in error.setup_problem
