"""A deployed stack as the operator's commands see it: outputs, parameters, secrets.

`--stack NAME` reads everything from CloudFormation (`describe_stacks`: outputs such as the
workspace bucket, parameters such as the SSM names of the secrets). Without it, the commands use
the variables the functions read (`OperatorSettings`). The bot token and the webhook's secret
token stay in SSM: read (decrypted) only when a command needs them, and never printed.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import boto3
from botocore.exceptions import ClientError, NoCredentialsError, NoRegionError
from pydantic import SecretStr

from nanobot_lambda.adapters.aws.clients import CLIENT_CONFIG
from nanobot_lambda.adapters.aws.errors import error_code
from nanobot_lambda.adapters.telegram.client import TelegramBot
from nanobot_lambda.settings import OperatorSettings


class OperatorError(Exception):
    """A problem the operator can fix. The message says what is wrong and how to fix it."""


class StackNotFound(OperatorError):
    pass


# Resources the commands use: (the template's output, the variable used without --stack).
RESOURCES: dict[str, tuple[str, str]] = {
    "workspace_bucket": ("WorkspaceBucketName", "WORKSPACE_BUCKET"),
    "sessions_table": ("SessionsTableName", "SESSIONS_TABLE"),
    "turn_queue_url": ("TurnQueueUrl", "TURN_QUEUE_URL"),
    "turn_dlq_url": ("TurnDeadLetterQueueUrl", "TURN_DLQ_URL"),
    "jobs_table": ("JobsTableName", "JOBS_TABLE"),
    "schedule_group": ("ScheduleGroupName", "SCHEDULE_GROUP"),
}
WEBHOOK_URL_OUTPUT = "WebhookUrl"
HOOKS_URL_OUTPUT = "HooksUrl"
CONSOLE_URL_OUTPUT = "ConsoleUrl"  # only with EnableConsole=true (the default)
# Every output of infra/template.yaml but the optional ones (a unit test keeps them equal):
# `doctor` checks them.
STACK_OUTPUTS = (
    WEBHOOK_URL_OUTPUT,
    HOOKS_URL_OUTPUT,
    *(output for output, _ in RESOURCES.values()),
    "DashboardUrl",
)
OPTIONAL_OUTPUTS = (CONSOLE_URL_OUTPUT,)
# The template parameters naming the secrets' SSM parameters, with the template's defaults.
BOT_TOKEN_PARAMETER = ("TelegramBotTokenParameter", "/nanobot-lambda/telegram-bot-token")
SECRET_TOKEN_PARAMETER = ("TelegramSecretTokenParameter", "/nanobot-lambda/telegram-secret-token")


def aws_setup_missing(error: BaseException) -> tuple[str, str] | None:
    """(what is missing, its fix) when `error` says that AWS is not set up on this machine: no
    credentials or no region (botocore asks for the region first, as it makes a client). Every
    command and `doctor` say it in these words; None for any other error."""
    if isinstance(error, NoCredentialsError):
        return (
            "no AWS credentials found",
            "run `aws configure` or set AWS_PROFILE (for a local moto server, "
            "AWS_ENDPOINT_URL and any key)",
        )
    if isinstance(error, NoRegionError):
        return (
            "no AWS region set",
            "run `aws configure` or set AWS_DEFAULT_REGION (or AWS_PROFILE) to the stack's region",
        )
    return None


def aws_client(service: str) -> Any:
    """A boto3 client with the functions' retry and timeout settings (AWS_ENDPOINT_URL applies)."""
    return boto3.client(service, config=CLIENT_CONFIG)  # type: ignore[call-overload]


def fetch_reference(kind: str, reference: str) -> str:
    """A secret reference of the settings (`X_PARAM`, `X_SECRET_ARN`), read with a fresh
    client: the CLI reads each once, and tests switch endpoints between runs."""
    if kind == "param":
        response = aws_client("ssm").get_parameter(Name=reference, WithDecryption=True)
        return str(response["Parameter"]["Value"])
    return str(aws_client("secretsmanager").get_secret_value(SecretId=reference)["SecretString"])


@dataclass(frozen=True)
class StackInfo:
    name: str
    status: str
    outputs: dict[str, str] = field(default_factory=dict)
    parameters: dict[str, str] = field(default_factory=dict)


def describe_stack(name: str, cloudformation: Any) -> StackInfo:
    try:
        (described,) = cloudformation.describe_stacks(StackName=name)["Stacks"]
    except ClientError as error:
        if error_code(error) == "ValidationError" and "does not exist" in str(error):
            region = cloudformation.meta.region_name
            raise StackNotFound(
                f"stack {name!r} does not exist in {region}: check the name "
                "(aws cloudformation list-stacks) or set AWS_DEFAULT_REGION"
            ) from None
        raise
    return StackInfo(
        name=name,
        status=described["StackStatus"],
        outputs={item["OutputKey"]: item["OutputValue"] for item in described.get("Outputs", [])},
        parameters={
            item["ParameterKey"]: item.get("ParameterValue", "")
            for item in described.get("Parameters", [])
        },
    )


class Deployment:
    """The stack (if named) and the settings, with lazily created AWS clients."""

    def __init__(
        self,
        settings: OperatorSettings,
        stack: StackInfo | None = None,
        client: Callable[[str], Any] = aws_client,
    ) -> None:
        self.settings = settings
        self.stack = stack
        self._client_factory = client
        self._clients: dict[str, Any] = {}

    @classmethod
    def connect(cls, stack_name: str | None, settings: OperatorSettings) -> Deployment:
        stack = describe_stack(stack_name, aws_client("cloudformation")) if stack_name else None
        return cls(settings, stack)

    def client(self, service: str) -> Any:
        if service not in self._clients:
            self._clients[service] = self._client_factory(service)
        return self._clients[service]

    # -- resources --------------------------------------------------------------------------

    def resource(self, name: str) -> str | None:
        output, _ = RESOURCES[name]
        if self.stack is not None:
            return self.stack.outputs.get(output)
        value: str | None = getattr(self.settings, name)
        return value

    def require(self, *names: str) -> list[str]:
        """The resources' names or URLs; one error naming every missing one and how to give it."""
        values = [self.resource(name) for name in names]
        missing = [name for name, value in zip(names, values, strict=True) if not value]
        if missing:
            if self.stack is not None:
                outputs = ", ".join(RESOURCES[name][0] for name in missing)
                raise OperatorError(
                    f"stack {self.stack.name!r} has no output {outputs}: "
                    "deploy the current template (sam deploy)"
                )
            variables = " and ".join(RESOURCES[name][1] for name in missing)
            raise OperatorError(f"give --stack NAME, or set {variables}")
        return [value for value in values if value]

    @property
    def webhook_url(self) -> str | None:
        return self.stack.outputs.get(WEBHOOK_URL_OUTPUT) if self.stack else None

    @property
    def console_url(self) -> str | None:
        """The console's page (None: a stack without it, EnableConsole=false)."""
        return self.stack.outputs.get(CONSOLE_URL_OUTPUT) if self.stack else None

    @property
    def hooks_url(self) -> str | None:
        """The event hooks' base URL: the stack's, or HOOKS_URL."""
        if self.stack is not None:
            return self.stack.outputs.get(HOOKS_URL_OUTPUT)
        return self.settings.hooks_url

    def parameter_name(self, parameter: tuple[str, str]) -> str:
        """The SSM name a template parameter holds for this stack (the default without one)."""
        key, default = parameter
        if self.stack is not None and self.stack.parameters.get(key):
            return self.stack.parameters[key]
        return default

    # -- secrets ----------------------------------------------------------------------------

    def read_secure(self, name: str) -> str | None:
        """An SSM SecureString's value, or None when the parameter does not exist."""
        try:
            response = self.client("ssm").get_parameter(Name=name, WithDecryption=True)
        except ClientError as error:
            if error_code(error) == "ParameterNotFound":
                return None
            raise
        return str(response["Parameter"]["Value"]).strip()

    def bot_token(self) -> SecretStr:
        """The stack's bot (its SSM parameter) with --stack; TELEGRAM_BOT_TOKEN without."""
        if self.stack is None:
            if self.settings.telegram_bot_token is None:
                raise OperatorError("no bot token: set TELEGRAM_BOT_TOKEN, or give --stack NAME")
            return self.settings.telegram_bot_token
        name = self.parameter_name(BOT_TOKEN_PARAMETER)
        value = self.read_secure(name)
        if not value:
            raise OperatorError(
                f"the bot token parameter {name} does not exist: create it with "
                f"aws ssm put-parameter --type SecureString --name {name} --value '123456:ABC...'"
            )
        return SecretStr(value)

    def telegram(self, *, read_timeout: float = 30.0) -> TelegramBot:
        return TelegramBot(
            self.bot_token(), self.settings.telegram_api_base, timeout=(3.05, read_timeout)
        )

    def ensure_secret_token(self) -> tuple[str, bool]:
        """The webhook's secret token from SSM, created (SecureString) if there is none.

        Returns (token, created). A token Telegram would refuse is an error, not replaced: the
        deployed webhook function compares against the stored one.
        """
        name = self.parameter_name(SECRET_TOKEN_PARAMETER)
        existing = self.read_secure(name)
        if existing:
            if not valid_secret_token(existing):
                raise OperatorError(
                    f"the secret token in {name} is not 1-256 characters of A-Z a-z 0-9 _ -, "
                    "which Telegram requires: store a new one with aws ssm put-parameter "
                    f"--overwrite --type SecureString --name {name} "
                    '--value "$(openssl rand -hex 32)"'
                )
            return existing, False
        token = secrets.token_urlsafe(32)  # A-Z a-z 0-9 _ -, as Telegram allows
        try:
            self.client("ssm").put_parameter(
                Name=name,
                Value=token,
                Type="SecureString",
                Overwrite=False,
                Description="nanobot-lambda webhook secret token (X-Telegram-Bot-Api-Secret-Token)",
            )
        except ClientError as error:
            if error_code(error) != "ParameterAlreadyExists":
                raise
            return self.ensure_secret_token()  # someone else created it meanwhile: use theirs
        return token, True


def valid_secret_token(token: str) -> bool:
    allowed = set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
    return 1 <= len(token) <= 256 and set(token) <= allowed
