"""Secret references read at start-up from SSM Parameter Store and Secrets Manager (moto server)."""

from __future__ import annotations

import uuid

import boto3
import pytest

from nanobot_lambda.adapters.aws.secrets import fetch_secret
from nanobot_lambda.core.errors import ConfigError
from nanobot_lambda.settings import WebhookSettings

WEBHOOK_ENV = {
    "ALLOW_FROM": "111",
    "TURN_QUEUE_URL": "https://sqs.us-east-1.amazonaws.com/123456789012/turns.fifo",
    "SESSIONS_TABLE": "sessions",
    "IDEMPOTENCY_TABLE": "idempotency",
}


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def test_ssm_secure_string_is_decrypted(aws: str) -> None:
    name = f"/nanobot-test/{unique('secret')}"
    boto3.client("ssm").put_parameter(Name=name, Value="from-ssm\n", Type="SecureString")
    settings = WebhookSettings.from_env(
        {**WEBHOOK_ENV, "TELEGRAM_SECRET_TOKEN_PARAM": name}, fetch_secret
    )
    assert settings.telegram_secret_token.get_secret_value() == "from-ssm"


def test_secrets_manager_string_and_binary_secrets(aws: str) -> None:
    secrets = boto3.client("secretsmanager")
    text = secrets.create_secret(Name=unique("text"), SecretString="from-secrets-manager")["ARN"]
    binary = secrets.create_secret(Name=unique("binary"), SecretBinary=b"bytes-secret")["ARN"]
    assert fetch_secret("secret", text) == "from-secrets-manager"
    assert fetch_secret("secret", binary) == "bytes-secret"
    settings = WebhookSettings.from_env(
        {**WEBHOOK_ENV, "TELEGRAM_SECRET_TOKEN_SECRET_ARN": text}, fetch_secret
    )
    assert settings.telegram_secret_token.get_secret_value() == "from-secrets-manager"


def test_a_missing_parameter_names_the_variable_not_a_value(aws: str) -> None:
    with pytest.raises(ConfigError) as error:
        WebhookSettings.from_env(
            {**WEBHOOK_ENV, "TELEGRAM_SECRET_TOKEN_PARAM": "/nowhere/x"}, fetch_secret
        )
    assert "TELEGRAM_SECRET_TOKEN_PARAM" in str(error.value)
    assert "ParameterNotFound" in str(error.value)
