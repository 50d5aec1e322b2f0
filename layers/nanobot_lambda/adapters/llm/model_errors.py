"""What a failed model call means for the owner: a setup problem to fix, or a passing failure.

litellm maps each provider's errors to OpenAI-style exceptions with an HTTP status. These mean
that no request can succeed as things are set up: a model name with no provider (litellm
refuses it before any request), a refused key (401), no credit left (402), a model that may not
be used (403) or does not exist (404, or a 400 that says so). Those are `setup_problem`s: the
owner is told what to fix instead of everyone being told to try again. Any other 400 or 4xx
(a request too long for the model's context, refused by a content filter, an image the
provider cannot read, a 422 litellm answers itself by dropping a parameter) belongs to that
request: another one may pass, so it is no setup problem.

Amazon Bedrock answers 403 for two different fixes, told apart by its message: the account has
not enabled the model ("You don't have access to the model…": the Bedrock console's Model
access page), or the caller's role may not invoke it ("…is not authorized to perform:
bedrock:InvokeModel…": the stack's BedrockModelArns parameter, or the local user's IAM policy).

Importing this module imports litellm: only the agent_turn function and the operator's `chat`
and `doctor` do.
"""

from __future__ import annotations

import litellm
from litellm.exceptions import ContentPolicyViolationError, ContextWindowExceededError

from nanobot_lambda.settings import LlmSettings

# Where the owner fixes it: locally (.env) and in a deployed stack (its parameters).
MODEL_SETTING = "LLM_MODEL (a stack: LlmModel)"
KEY_SETTING = "LLM_API_KEY (a stack: the SSM parameter LlmApiKeyParameter names)"
SETUP_STATUSES = frozenset({401, 402, 403, 404})
# A 400 that names the model as the problem (OpenAI, Bedrock's ValidationException, others).
UNKNOWN_MODEL_WORDS = (
    "model identifier is invalid",
    "model not found",
    "does not exist",
    "unknown model",
    "invalid model",
)
BEDROCK_NO_MODEL_ACCESS = "don't have access to the model"
BEDROCK_NOT_AUTHORIZED = "not authorized to perform: bedrock:invokemodel"
# litellm's words for a model string whose provider it cannot tell (a BadRequestError, 400).
NO_PROVIDER = "llm provider not provided"
# Every provider prefix litellm knows, shown when a model name has none.
PROVIDER_EXAMPLES = "openai/…, anthropic/…, bedrock/…, gemini/…, openrouter/…, ollama_chat/…"


def setup_problem(model: str, error: BaseException) -> str | None:
    """What the owner must fix for `model` to answer, in a few words with no provider text and
    no secret; None when the failure may pass (a retry, a later message may get through)."""
    text = " ".join(str(error).split()).lower()
    if NO_PROVIDER in text:
        return no_provider_problem(model)
    if isinstance(error, ContextWindowExceededError | ContentPolicyViolationError):
        return None
    status = getattr(error, "status_code", None)
    if status == 400 and any(words in text for words in UNKNOWN_MODEL_WORDS):
        return f"{model}: the provider knows no such model ({status}); check {MODEL_SETTING}"
    if status not in SETUP_STATUSES:
        return None
    if BEDROCK_NO_MODEL_ACCESS in text:
        return (
            f"{model}: this AWS account has no access to the model in Bedrock ({status}); "
            "request it on the Bedrock console's Model access page, in the stack's region"
        )
    if BEDROCK_NOT_AUTHORIZED in text:
        return (
            f"{model}: the AWS identity calling Bedrock may not invoke the model "
            f"(bedrock:InvokeModel, {status}); a deployed stack: add the model's ARN to its "
            "BedrockModelArns parameter and redeploy; elsewhere: grant it to your IAM identity"
        )
    if status == 401:
        return f"{model}: the provider refused the API key (401); check {KEY_SETTING}"
    if status == 402:
        return f"{model}: the provider refused the request (402); check the account's credit"
    if status == 403:
        return f"{model}: the provider refused access to the model (403); check the key's rights"
    return f"{model}: the provider knows no such model (404); check {MODEL_SETTING}"


def no_provider_problem(model: str) -> str:
    return (
        f"{model}: the model name names no provider litellm knows; a model's name starts with "
        f"one, e.g. {PROVIDER_EXAMPLES}"
    )


def model_name_problem(model: str) -> str | None:
    """A cheap check, no request: None if litellm can tell `model`'s provider, else the
    problem (what `chat` and `doctor` say before anything is sent)."""
    try:
        litellm.get_llm_provider(model)
    except Exception:
        return no_provider_problem(model)
    return None


def model_name_problems(settings: LlmSettings) -> list[tuple[str, str]]:
    """(variable, problem) for each model the settings name whose provider litellm cannot
    tell: LLM_MODEL, each of LLM_FALLBACK_MODELS, HEARTBEAT_MODEL, CONSOLIDATION_MODEL."""
    named = [("LLM_MODEL", settings.llm_model)]
    named += [("LLM_FALLBACK_MODELS", model) for model in settings.llm_fallback_models]
    named += [
        (variable, model)
        for variable, model in (
            ("HEARTBEAT_MODEL", settings.heartbeat_model),
            ("CONSOLIDATION_MODEL", settings.consolidation_model),
        )
        if model
    ]
    return [
        (variable, problem)
        for variable, model in named
        if (problem := model_name_problem(model)) is not None
    ]


def connection_refused(error: BaseException) -> bool:
    """Whether nothing listened where the model was sought (a local server not started, a
    wrong LLM_API_BASE port): litellm reports that as a status 500 of its own."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, ConnectionRefusedError):
            return True
        if "connection refused" in str(current).lower():
            return True
        current = current.__cause__ or current.__context__
    return False
