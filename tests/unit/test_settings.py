"""Settings: one model family, built from the environment, failing with the variable's name."""

from __future__ import annotations

import pytest

from nanobot_lambda.core.errors import ConfigError
from nanobot_lambda.settings import AgentSettings, SchedulerSettings, WebhookSettings
from tests.support.settings import AGENT_ENV

QUEUE = "https://sqs.us-east-1.amazonaws.com/123456789012/turns.fifo"
WEBHOOK_ENV = {
    "TELEGRAM_SECRET_TOKEN": "s3cret",
    "ALLOW_FROM": "111",
    "TURN_QUEUE_URL": QUEUE,
    "SESSIONS_TABLE": "sessions",
    "IDEMPOTENCY_TABLE": "idempotency",
}


def no_fetch(kind: str, reference: str) -> str:
    raise AssertionError(f"unexpected fetch of {kind} {reference}")


def test_webhook_settings_from_direct_values() -> None:
    settings = WebhookSettings.from_env(WEBHOOK_ENV, fetch=no_fetch)
    assert settings.telegram_secret_token.get_secret_value() == "s3cret"
    assert settings.allow_from.allows(111)
    assert settings.turn_queue_url == QUEUE


def test_agent_settings_defaults() -> None:
    settings = AgentSettings.from_env(AGENT_ENV, fetch=no_fetch)
    assert settings.telegram_api_base == "https://api.telegram.org"
    assert settings.max_tool_iterations == 40
    assert settings.llm_api_base is None
    assert settings.llm_api_key is None
    assert settings.timezone == "UTC"


def test_missing_variables_are_named() -> None:
    with pytest.raises(ConfigError) as error:
        AgentSettings.from_env({"LLM_MODEL": "x"}, fetch=no_fetch)
    message = str(error.value)
    for name in ("TELEGRAM_BOT_TOKEN", "WORKSPACE_BUCKET", "SESSIONS_TABLE"):
        assert f"{name} is not set" in message
    assert "agent_turn" in message


def test_invalid_values_are_named() -> None:
    env = {**AGENT_ENV, "MAX_TOOL_ITERATIONS": "zero", "TIMEZONE": "Mars/Olympus"}
    with pytest.raises(ConfigError) as error:
        AgentSettings.from_env(env, fetch=no_fetch)
    assert "MAX_TOOL_ITERATIONS" in str(error.value)
    assert "unknown timezone 'Mars/Olympus'" in str(error.value)


def test_queue_url_must_be_fifo() -> None:
    with pytest.raises(ConfigError, match="TURN_QUEUE_URL"):
        WebhookSettings.from_env({**WEBHOOK_ENV, "TURN_QUEUE_URL": "https://sqs/q"}, fetch=no_fetch)


def test_allow_from_must_be_set_but_may_be_empty() -> None:
    with pytest.raises(ConfigError, match="ALLOW_FROM is not set"):
        WebhookSettings.from_env(
            {k: v for k, v in WEBHOOK_ENV.items() if k != "ALLOW_FROM"}, fetch=no_fetch
        )
    settings = WebhookSettings.from_env({**WEBHOOK_ENV, "ALLOW_FROM": ""}, fetch=no_fetch)
    assert settings.allow_from.allows_nobody


def test_secret_reference_is_resolved_and_direct_value_wins() -> None:
    fetched: list[tuple[str, str]] = []

    def fetch(kind: str, reference: str) -> str:
        fetched.append((kind, reference))
        return {"/bot/token": "999:from-ssm", "arn:key": "sk-from-secrets"}[reference]

    env = {**AGENT_ENV, "LLM_API_KEY_SECRET_ARN": "arn:key", "TELEGRAM_BOT_TOKEN": ""}
    env["TELEGRAM_BOT_TOKEN_PARAM"] = "/bot/token"
    settings = AgentSettings.from_env(env, fetch=fetch)
    assert settings.telegram_bot_token.get_secret_value() == "999:from-ssm"
    assert settings.llm_api_key is not None
    assert settings.llm_api_key.get_secret_value() == "sk-from-secrets"

    fetched.clear()
    direct = AgentSettings.from_env({**env, "TELEGRAM_BOT_TOKEN": "1:direct"}, fetch=fetch)
    assert direct.telegram_bot_token.get_secret_value() == "1:direct"
    assert ("param", "/bot/token") not in fetched


def test_only_declared_secrets_are_fetched() -> None:
    """The webhook does not use the bot token: a reference to it must not cost an SSM call."""
    settings = WebhookSettings.from_env(
        {**WEBHOOK_ENV, "TELEGRAM_BOT_TOKEN_PARAM": "/bot/token"}, fetch=no_fetch
    )
    assert settings.turn_queue_url == QUEUE


def test_the_scheduler_needs_the_bot_token_and_jobs_table() -> None:
    """It sends reminders itself, straight to the chat."""
    with pytest.raises(ConfigError) as error:
        SchedulerSettings.from_env({"TURN_QUEUE_URL": QUEUE, "WORKSPACE_BUCKET": "bucket"})
    assert "TELEGRAM_BOT_TOKEN is not set" in str(error.value)
    assert "JOBS_TABLE is not set" in str(error.value)


def test_unreadable_reference_names_the_variable_not_a_secret() -> None:
    def failing(kind: str, reference: str) -> str:
        raise PermissionError("AccessDenied for 123:should-not-leak")

    with pytest.raises(ConfigError) as error:
        AgentSettings.from_env({**AGENT_ENV, "LLM_API_KEY_PARAM": "/llm/key"}, fetch=failing)
    assert "LLM_API_KEY_PARAM" in str(error.value)
    assert "should-not-leak" not in str(error.value)


def test_secrets_are_not_in_repr() -> None:
    settings = AgentSettings.from_env({**AGENT_ENV, "LLM_API_KEY": "sk-very-secret"})
    assert "sk-very-secret" not in repr(settings)
    assert "123:abc" not in str(settings)


def test_invalid_secret_value_is_not_echoed() -> None:
    with pytest.raises(ConfigError) as error:
        WebhookSettings.from_env({**WEBHOOK_ENV, "TELEGRAM_SECRET_TOKEN": "x" * 300})
    assert "TELEGRAM_SECRET_TOKEN" in str(error.value)
    assert "x" * 300 not in str(error.value)


def test_the_webhook_acknowledges_with_typing_by_default() -> None:
    settings = WebhookSettings.from_env(WEBHOOK_ENV, fetch=no_fetch)
    assert settings.ack_reaction == ""
    assert settings.group_policy == "mention"
    blank = WebhookSettings.from_env({**WEBHOOK_ENV, "ACK_REACTION": "  "}, fetch=no_fetch)
    assert blank.ack_reaction == ""


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("👀", "👀"),
        (" 👍 ", "👍"),
        ("\u2764", "\u2764"),  # ❤ as Telegram spells it
        ("\u2764\ufe0f", "\u2764"),  # ❤️ as keyboards type it
        ("\u2764\ufe0f\u200d\U0001f525", "\u2764\u200d\U0001f525"),  # ❤️‍🔥
        ("\U0001f937\u200d\u2642\ufe0f", "\U0001f937\u200d\u2642"),  # 🤷‍♂️
        ("\u270d\ufe0f", "\u270d"),  # ✍️
    ],
)
def test_ack_reaction_is_kept_in_telegrams_spelling(value: str, expected: str) -> None:
    settings = WebhookSettings.from_env({**WEBHOOK_ENV, "ACK_REACTION": value}, fetch=no_fetch)
    assert settings.ack_reaction == expected


@pytest.mark.parametrize("value", ["🦜", "👍👍", ":eyes:", "\u2764\u200d", "ok"])
def test_an_emoji_telegram_refuses_as_a_reaction_is_named(value: str) -> None:
    with pytest.raises(ConfigError) as error:
        WebhookSettings.from_env({**WEBHOOK_ENV, "ACK_REACTION": value}, fetch=no_fetch)
    message = str(error.value)
    assert message.startswith("Invalid configuration for the webhook function: ACK_REACTION:")
    assert "not an emoji Telegram accepts as a reaction" in message
    assert "👀" in message  # the allowed ones are listed


def test_the_webhook_reads_the_group_policy_too() -> None:
    settings = WebhookSettings.from_env({**WEBHOOK_ENV, "GROUP_POLICY": "open"}, fetch=no_fetch)
    assert settings.group_policy == "open"
    with pytest.raises(ConfigError, match="GROUP_POLICY"):
        WebhookSettings.from_env({**WEBHOOK_ENV, "GROUP_POLICY": "everyone"}, fetch=no_fetch)


def test_a_reference_without_a_reader_is_named_not_fetched() -> None:
    """Reading secrets is an adapter's job: the handlers pass `fetch_secret` in. A caller that
    passes no reader is told which reference it was given, and nothing reaches AWS."""
    with pytest.raises(ConfigError) as error:
        AgentSettings.from_env({**AGENT_ENV, "LLM_API_KEY_PARAM": "/llm/key"})
    assert "LLM_API_KEY_PARAM: secret references are not read here" in str(error.value)
    assert "/llm/key" not in str(error.value)
    # A direct value still wins over the reference, with no reader needed.
    settings = AgentSettings.from_env(
        {**AGENT_ENV, "LLM_API_KEY": "sk-direct", "LLM_API_KEY_PARAM": "/llm/key"}
    )
    assert settings.llm_api_key is not None
    assert settings.llm_api_key.get_secret_value() == "sk-direct"
