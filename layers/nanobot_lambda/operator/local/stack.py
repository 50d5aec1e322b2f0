"""The whole deployment on one machine: moto as AWS, a local Bot API, the three handlers.

Everything is derived from `infra/template.yaml`: the resources, their settings, and each
function's environment. Secrets go where the deployed stack keeps them (SSM SecureStrings, on
moto), so the functions resolve them the same way. The handlers are the deployed files,
imported in-process; the agent_turn handler is fed by a poller that behaves like Lambda's SQS
event source mapping, and the HTTP API's routes (the webhook, the event hooks) are served on
127.0.0.1 (`http_api.py`), whose address the functions see where the deployed ones see the
API's (`HOOKS_URL`).

The functions see the environment the deployed ones would: the template's. The caller's
environment (a shell or `.env` that also serves a deployed stack) only fills the settings the
template leaves empty for tuning; what the local stack provides itself (its AWS, resources, bot
token, webhook secret, allow-list) is never taken from it, and the variables the template does
not declare (secret references such as `TELEGRAM_SECRET_TOKEN_PARAM`, an `AWS_PROFILE`) are
hidden from the functions while the stack runs.
"""

from __future__ import annotations

import base64
import itertools
import json
import logging
import os
import secrets
import shutil
import sys
import tempfile
import threading
import time
import urllib.parse
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType
from typing import Any

import boto3

from nanobot_lambda.adapters.aws.workspace import S3Workspace, scope_workspaces
from nanobot_lambda.core import launch_data
from nanobot_lambda.core.allowlist import AllowList
from nanobot_lambda.core.ports import Workspace
from nanobot_lambda.core.scopes import ScopedWorkspace, scope_of_chat
from nanobot_lambda.core.workspace import seed_workspace
from nanobot_lambda.functions.sandbox_confinement import landlock_abi, set_dumpable
from nanobot_lambda.functions.webhook import SECRET_HEADER
from nanobot_lambda.operator.local.bot_api import LocalBotApi, SentDraft, SentFile, SentMessage
from nanobot_lambda.operator.local.cfn import TemplateContext, load_template
from nanobot_lambda.operator.local.http_api import LocalHttpApi, deployed_api_url, http_api_routes
from nanobot_lambda.operator.local.lambda_invoke import DEFAULT_TIMEOUT_SECONDS, LocalLambdas
from nanobot_lambda.operator.local.resources import create_resources
from nanobot_lambda.operator.local.runtime import (
    LocalLambdaContext,
    QueuePoller,
    load_handler_module,
)
from nanobot_lambda.operator.local.schedule_runner import ScheduleRunner
from nanobot_lambda.operator.local.state import LocalState
from nanobot_lambda.operator.local.webhook_reply import reply_method
from nanobot_lambda.settings import (
    SECRET_REFERENCE_SUFFIXES,
    SECRET_VARIABLES,
    AgentSettings,
    ConsoleSettings,
    SchedulerSettings,
    WebhookSettings,
)

logger = logging.getLogger(__name__)
REGION = "us-east-1"
SANDBOX_FUNCTION = "SandboxFunction"  # invoked by agent_turn with boto3; see _start_lambdas
FUNCTIONS = {
    "webhook": "WebhookFunction",
    "agent_turn": "AgentTurnFunction",
    "scheduler": "SchedulerFunction",
    "console": "ConsoleFunction",  # with EnableConsole=true (the default)
}

# Declared empty by the template, but provided by the local stack itself: its Telegram identity
# (the local Bot API, or the token `poll` is given), its webhook secret, the model key (stored
# in SSM from the model settings, as deployed) and its allow-list. Never taken from the caller.
PROVIDED_BY_THE_STACK = frozenset(
    {
        "TELEGRAM_BOT_TOKEN",
        "TELEGRAM_SECRET_TOKEN",
        "TELEGRAM_API_BASE",
        "LLM_API_KEY",
        "ALLOW_FROM",
        "HEARTBEAT_CHAT_ID",
    }
)


def variables_the_functions_read() -> frozenset[str]:
    """Every variable a function's settings read, secret references included."""
    names = {
        field.alias or name
        for settings in (WebhookSettings, AgentSettings, SchedulerSettings, ConsoleSettings)
        for name, field in settings.model_fields.items()
    }
    names.update(
        secret + suffix for secret in SECRET_VARIABLES for suffix in SECRET_REFERENCE_SUFFIXES
    )
    return frozenset(names)


@dataclass(frozen=True)
class LocalUser:
    id: int = 100000001
    username: str = "local_user"
    first_name: str = "You"

    def as_telegram(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "is_bot": False,
            "first_name": self.first_name,
            "username": self.username,
            "language_code": "en",
        }


class LogSink(logging.Handler):
    """Collects the functions' log records; echoes WARNING and up to a callback if given."""

    def __init__(self, echo: Callable[[logging.LogRecord], None] | None = None) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []
        self._echo = echo

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)
        if self._echo is not None and record.levelno >= logging.WARNING:
            self._echo(record)

    @property
    def errors(self) -> list[logging.LogRecord]:
        return [record for record in self.records if record.levelno >= logging.ERROR]


@dataclass(frozen=True)
class LocalTelegram:
    """Who writes to the local stack, and which Bot API its functions talk to."""

    user: LocalUser = field(default_factory=LocalUser)
    allow_from: str | None = None  # None: the local user only
    bot_token: str | None = None  # None: one made up for the local Bot API
    # Given (with the real bot's `bot_token`): the functions talk to that Bot API (real
    # Telegram for `poll`) and no local Bot API is started.
    api_base: str | None = None


@dataclass(frozen=True)
class LocalOutput:
    """Where the bot's messages and the functions' logs go (the CLI prints them)."""

    on_message: Callable[[SentMessage], None] | None = None
    on_draft: Callable[[SentDraft], None] | None = None  # a reply as it is being written
    on_file: Callable[[SentFile], None] | None = None  # a photo, document, audio or voice
    on_log: Callable[[logging.LogRecord], None] | None = None  # WARNING and up
    replace_log_output: bool = False  # the functions' own log output is dropped


def _kept_by_litellm(variable: str) -> bool:
    """litellm points TIKTOKEN_CACHE_DIR at the encodings it bundles when it is imported (on
    Lambda, after the template's value is set). Once litellm is imported, a stack must neither
    set nor restore it, or tiktoken would look for them elsewhere and try to download them."""
    return variable == "TIKTOKEN_CACHE_DIR" and "litellm" in sys.modules


class LocalStack:
    def __init__(
        self,
        template_path: Path,
        *,
        model_env: Mapping[str, str],
        telegram: LocalTelegram | None = None,
        output: LocalOutput | None = None,
        endpoint_url: str | None = None,
        parameters: Mapping[str, str] | None = None,
    ) -> None:
        telegram = telegram or LocalTelegram()
        output = output or LocalOutput()
        self.template_path = template_path
        self.user = telegram.user
        self.bot_token = telegram.bot_token or f"100200300:local-{secrets.token_urlsafe(12)}"
        self._telegram_api_base = telegram.api_base
        self.secret_token = secrets.token_urlsafe(24)
        self.prefix = f"nanobot-{uuid.uuid4().hex[:8]}"
        self._state: LocalState | None = None  # see keep_in
        self._started = False  # start() completed: stop() may save the state
        self.log_sink = LogSink(output.on_log)
        self._model_env = dict(model_env)
        self._allow_from = str(self.user.id) if telegram.allow_from is None else telegram.allow_from
        self._extra_parameters = dict(parameters or {})
        self._endpoint_url = endpoint_url
        self._on_message = output.on_message
        self._on_draft = output.on_draft
        self._on_file = output.on_file
        self._replace_log_output = output.replace_log_output
        # The variables this stack set, with the values they had before (None: unset).
        self._replaced_environ: dict[str, str | None] = {}
        self._moto: Any = None
        self._update_ids = itertools.count(int(time.time()) % 100_000_000 * 10)
        self.handlers: dict[str, ModuleType] = {}
        self.environment: dict[str, dict[str, str]] = {}
        self.schedule_clock: datetime | None = None  # None: real time
        self._worker: threading.Thread | None = None
        self._worker_stop = threading.Event()
        self.http_api: LocalHttpApi | None = None
        # One request at a time per function `invoke` runs, as one Lambda container serves
        # one: the chat posts updates to the webhook while the HTTP API's thread brings it the
        # hooks' events.
        self._invocations = {name: threading.Lock() for name in FUNCTIONS}
        # (method, status, description) of webhook-answer calls the Bot API refused.
        self.reply_method_errors: list[tuple[str, int, str]] = []
        # --- functions invoked with boto3 (lambda:InvokeFunction), see _start_lambdas ---
        self.lambdas: LocalLambdas | None = None
        self.sandbox_root: Path | None = None
        self._dumpable_before = True

    # -- lifecycle -------------------------------------------------------------------------

    def keep_in(self, state: LocalState) -> LocalStack:
        """Keep this stack's data in a state folder (call before start): its resources take
        the names the data was kept under, start() puts the data back, stop() saves it."""
        self._state = state
        self.prefix = state.prefix() or self.prefix
        return self

    def start(self) -> LocalStack:
        try:
            self._start()
        except BaseException:
            self.stop()
            raise
        return self

    def _start(self) -> None:
        if self._endpoint_url is None:
            from nanobot_lambda.operator.local.moto_server import start_moto_server

            self._moto, self._endpoint_url = start_moto_server()
        # The stack's AWS is moto: no caller's profile, service endpoint or credential applies.
        self._unset_environ(name for name in os.environ if name.startswith("AWS_"))
        self._set_environ(
            AWS_ENDPOINT_URL=self._endpoint_url,
            AWS_ACCESS_KEY_ID="local",
            AWS_SECRET_ACCESS_KEY="local",  # noqa: S106 - moto accepts any credentials
            AWS_SESSION_TOKEN="local",  # noqa: S106
            AWS_DEFAULT_REGION=REGION,
            AWS_REGION=REGION,
            # No X-Ray daemon here: the Tracer stays inert (it also is outside Lambda).
            POWERTOOLS_TRACE_DISABLED="true",
        )
        if self._replace_log_output:
            # The CLI's quiet mode: no EMF metric records among the replies on the terminal.
            self._set_environ(POWERTOOLS_METRICS_DISABLED="true")
        if self._telegram_api_base is None:
            self.bot_api = LocalBotApi(
                self.bot_token, self._on_message, self._on_draft, on_file=self._on_file
            ).start()
        api_base = self._telegram_api_base or self.bot_api.base_url
        self.template = TemplateContext(
            load_template(self.template_path), parameters=self._template_parameters()
        )
        create_resources(self.template, self.prefix, REGION)
        self.functions = {
            name: logical_id
            for name, logical_id in FUNCTIONS.items()
            if self.template.resource_enabled(logical_id)
        }
        self.http_api = LocalHttpApi(http_api_routes(self.template), self._invoke).start()
        deployed_api = deployed_api_url(self.template)
        # As Lambda tells an init that will be snapshotted (EnableSnapStart) from an ordinary one.
        snapstart = self.template.condition("SnapStartEnabled")
        self._set_environ(AWS_LAMBDA_INITIALIZATION_TYPE="snap-start" if snapstart else "on-demand")
        self._store_secrets()
        if self._state is not None:
            self._state.restore(self.template)
        for name, logical_id in self.functions.items():
            environment = {
                variable: self.http_api.localized(value, deployed_api)  # HOOKS_URL
                for variable, value in self.template.function_environment(logical_id).items()
            }
            # An empty template value means "unset, use the default": a value the caller has
            # (from .env, or a test) stands, as `sam local invoke --env-vars` would, unless the
            # stack provides that variable itself.
            for variable, value in environment.items():
                if (
                    value == ""
                    and variable not in PROVIDED_BY_THE_STACK
                    and os.environ.get(variable)
                ):
                    environment[variable] = os.environ[variable]
            environment["TELEGRAM_API_BASE"] = api_base
            self.environment[name] = environment
        # The functions read os.environ when imported: it holds their variables and none of the
        # caller's for what the stack provides or the template does not declare.
        declared = {
            variable for environment in self.environment.values() for variable in environment
        }
        self._unset_environ(
            variable
            for variable in variables_the_functions_read() | PROVIDED_BY_THE_STACK
            if variable not in declared
        )
        for environment in self.environment.values():
            self._set_environ(
                **{
                    k: v
                    for k, v in environment.items()
                    if os.environ.get(k) != v and not _kept_by_litellm(k)
                }
            )
        self._start_lambdas()
        seed_workspace(self.workspace)
        # The handlers log while they are imported (agent_turn's warm-up), before their log
        # output can be replaced: in the CLI's quiet mode, nothing below WARNING then.
        if self._replace_log_output:
            logging.disable(logging.INFO)
        try:
            for name, logical_id in self.functions.items():
                # SAM resolves CodeUri relative to the template's folder.
                code_uri = self._function_property(logical_id, "CodeUri")
                code_dir = (self.template_path.parent / code_uri).resolve()
                self.handlers[name] = load_handler_module(code_dir, f"nanobot_local_{name}")
        finally:
            logging.disable(logging.NOTSET)
        self._attach_log_sink()
        # The template's event source mapping: which queue feeds agent_turn, how many at once
        # (one invocation at a time here: within its MaximumConcurrency, whatever it is).
        mapping = self.template.queue_mapping(FUNCTIONS["agent_turn"])
        self.poller = QueuePoller(
            boto3.client("sqs"),
            self.template.refs[mapping.queue],
            self.handlers["agent_turn"].handler,
            context=lambda: self._context("agent_turn"),
            batch_size=mapping.batch_size,
        )
        # EventBridge Scheduler, played locally: moto stores schedules but never fires them.
        self.schedules = ScheduleRunner(
            boto3.client("scheduler"),
            self.template.refs["ScheduleGroup"],
            fire=self._invoke_scheduler,
            now=lambda: self.schedule_clock or datetime.now(UTC),
        )
        self._started = True

    def output(self, name: str) -> str | None:
        """An output of the template as this stack gives it (the API's URLs: the local one)."""
        declared = self.template.template.get("Outputs", {}).get(name)
        if declared is None or (
            "Condition" in declared and not self.template.condition(declared["Condition"])
        ):
            return None
        value = str(self.template.evaluate(declared["Value"]))
        if self.http_api is not None:
            value = self.http_api.localized(value, deployed_api_url(self.template))
        return value

    @property
    def hooks_url(self) -> str | None:
        """The event hooks' base URL on this machine (`POST <it>/NAME`), after start()."""
        return self.output("HooksUrl")

    @property
    def console_url(self) -> str | None:
        """The console's page on this machine (None: EnableConsole=false), after start()."""
        return self.output("ConsoleUrl")

    def console_launch_url(self, user: Mapping[str, Any] | None = None) -> str | None:
        """The console's URL as Telegram opens it for `user` (default: the local user): its
        launch data, signed with this stack's bot token as Telegram signs it, in the fragment
        (`#tgWebAppData=…`), so it opens in a browser on this machine. Valid for
        CONSOLE_LAUNCH_MAX_AGE_SECONDS (an hour by default)."""
        url = self.console_url
        if url is None:
            return None
        person = dict(user or self.user.as_telegram())
        fields = {
            "user": json.dumps(person, separators=(",", ":"), ensure_ascii=False),
            "auth_date": str(int(time.time())),
            "chat_type": "private",
            "chat_instance": str(person["id"] * 7 % 10**12),
        }
        launch = launch_data.sign(fields, self.bot_token)
        fragment = urllib.parse.urlencode(
            {"tgWebAppData": launch, "tgWebAppVersion": "8.0", "tgWebAppPlatform": "web"}
        )
        return f"{url}#{fragment}"

    @property
    def endpoint_url(self) -> str:
        """The moto server this stack's AWS is (after start())."""
        assert self._endpoint_url is not None
        return self._endpoint_url

    def stop(self) -> None:
        self.stop_background()
        try:
            if self._state is not None and self._started:
                # Only a stack that started whole is saved: a failed start (a restore that
                # broke off) must not replace the kept data with part of it.
                self._state.save(self.template, self.prefix)
        finally:
            self._started = False
            self._release()

    def _release(self) -> None:
        """Stop the servers and give the process its environment back."""
        if self.http_api is not None:
            self.http_api.stop()
            self.http_api = None
        self._stop_lambdas()
        if hasattr(self, "bot_api"):
            self.bot_api.stop()
        if self._moto is not None:
            self._moto.stop()
            self._moto = None
        for logger in self._function_loggers():
            if self.log_sink in logger.handlers:
                logger.removeHandler(self.log_sink)
        for name, previous in self._replaced_environ.items():
            if _kept_by_litellm(name):
                continue
            if previous is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = previous
        self._replaced_environ = {}

    # --- functions invoked with boto3 (lambda:InvokeFunction) --------------------------------

    def _start_lambdas(self) -> None:
        """Serve Lambda's Invoke API for the functions the others invoke (the code sandbox),
        each invocation in its own worker process; moto's Lambda cannot run them (no Docker).
        The sandbox is registered under what `!Ref SandboxFunction` gives (its local name), with
        the template's environment only (it runs the model's code: nothing of the caller's, no
        AWS credentials) and `SANDBOX_ROOT` in a folder of this stack's; boto3 reaches it
        through AWS_ENDPOINT_URL_LAMBDA. While it is served this process is undumpable: the
        code (run by a grandchild) cannot read its environment or memory."""
        resource = self.template.template["Resources"].get(SANDBOX_FUNCTION)
        if resource is None or (
            "Condition" in resource and not self.template.condition(resource["Condition"])
        ):
            return  # no sandbox in this template, or not with these parameters (EnableSandbox)
        self.sandbox_root = Path(tempfile.mkdtemp(prefix=f"{self.prefix}-sandbox-"))
        environment = self.template.function_environment(SANDBOX_FUNCTION)
        environment["SANDBOX_ROOT"] = str(self.sandbox_root)
        code_uri = self._function_property(SANDBOX_FUNCTION, "CodeUri")
        timeout = resource["Properties"].get(
            "Timeout",
            self.template.template.get("Globals", {})
            .get("Function", {})
            .get("Timeout", DEFAULT_TIMEOUT_SECONDS),
        )
        self.lambdas = LocalLambdas()
        self.lambdas.register(
            self.template.refs[SANDBOX_FUNCTION],
            (self.template_path.parent / code_uri).resolve() / "app.py",
            environment,
            timeout_seconds=float(timeout),
        )
        self.lambdas.start()
        self._set_environ(AWS_ENDPOINT_URL_LAMBDA=self.lambdas.url)
        # This process holds the caller's environment and what it read from .env: closed to
        # the code the sandbox runs (see functions/sandbox_confinement.py), until stop().
        self._dumpable_before = set_dumpable(False)
        if landlock_abi() == 0:
            logger.warning(
                "This kernel has no Landlock: the code the local sandbox runs can read every "
                "file your user can (~/.aws/credentials, .env) and the environment of your "
                "other processes; on Lambda it cannot (README: Code sandbox)"
            )

    def _stop_lambdas(self) -> None:
        if self.lambdas is not None:
            self.lambdas.stop()
            self.lambdas = None
            set_dumpable(self._dumpable_before)
        if self.sandbox_root is not None:
            shutil.rmtree(self.sandbox_root, ignore_errors=True)
            self.sandbox_root = None

    # --- end of functions invoked with boto3 ----------------------------------------------

    def _set_environ(self, **values: str) -> None:
        """Set process variables, remembering the first previous value of each for stop()."""
        for name, value in values.items():
            self._replaced_environ.setdefault(name, os.environ.get(name))
            os.environ[name] = value

    def _unset_environ(self, names: Iterable[str]) -> None:
        """Remove process variables until stop(), which puts back their previous values."""
        for name in list(names):
            if name in os.environ:
                self._replaced_environ.setdefault(name, os.environ[name])
                del os.environ[name]

    def __enter__(self) -> LocalStack:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- configuration ---------------------------------------------------------------------

    def _template_parameters(self) -> dict[str, str]:
        parameters = {
            "AllowFrom": self._allow_from,
            "LlmModel": self._model_env.get("LLM_MODEL", ""),
            "LlmApiBase": self._model_env.get("LLM_API_BASE", ""),
            "HeartbeatChatId": str(self.user.id),
        }
        if self._model_env.get("LLM_API_KEY"):
            parameters["LlmApiKeyParameter"] = "/nanobot-lambda/llm-api-key"
        parameters.update(self._extra_parameters)
        return parameters

    def _store_secrets(self) -> None:
        values = {
            "TelegramBotTokenParameter": self.bot_token,
            "TelegramSecretTokenParameter": self.secret_token,
            "LlmApiKeyParameter": self._model_env.get("LLM_API_KEY", ""),
        }
        ssm = boto3.client("ssm")
        for parameter, value in values.items():
            name = self.template.parameters.get(parameter, "")
            if name and value:
                ssm.put_parameter(Name=name, Value=value, Type="SecureString", Overwrite=True)

    def _function_property(self, logical_id: str, name: str) -> Any:
        properties = self.template.template["Resources"][logical_id]["Properties"]
        if name in properties:
            return properties[name]
        return self.template.template.get("Globals", {}).get("Function", {})[name]

    def _function_loggers(self) -> list[logging.Logger]:
        """The handlers' Powertools logger and the package's top logger (children propagate)."""
        service = self.environment.get("webhook", {}).get("POWERTOOLS_SERVICE_NAME", "nanobot")
        return [logging.getLogger(service), logging.getLogger("nanobot_lambda")]

    def _attach_log_sink(self) -> None:
        for logger in self._function_loggers():
            if self._replace_log_output:
                logger.handlers = []
            logger.addHandler(self.log_sink)

    def _context(self, name: str) -> LocalLambdaContext:
        logical_id = FUNCTIONS[name]
        return LocalLambdaContext(
            f"{self.prefix}-{name}",
            timeout_seconds=float(self._function_property(logical_id, "Timeout")),
            memory_limit_in_mb=int(self._function_property(logical_id, "MemorySize")),
        )

    # -- using it --------------------------------------------------------------------------

    @property
    def workspace(self) -> S3Workspace:
        """The owner's workspace."""
        return S3Workspace(self.template.refs["WorkspaceBucket"], boto3.client("s3"))

    def workspace_of(self, chat_id: int) -> Workspace:
        """The workspace a chat's turns work in: the owner's, or its scope's view
        (core/scopes.py; the owner is ALLOW_FROM's first user id, as OWNER_ID is not set)."""
        owner = AllowList.parse(self._allow_from).first_user_id
        scope = scope_of_chat(chat_id, owner)
        if scope.is_owner:
            return self.workspace
        private = scope_workspaces(self.template.refs["WorkspaceBucket"], boto3.client("s3"))
        return ScopedWorkspace(self.workspace, private(scope))

    def text_update(self, text: str, *, chat_id: int | None = None) -> dict[str, Any]:
        """A real-shaped Update for a text message in a private chat: the local user's, or
        with `chat_id`, that chat's person's (in a private chat only its person writes)."""
        update_id = next(self._update_ids)
        user = self.user.as_telegram()
        if chat_id is not None and chat_id != self.user.id:
            user = {"id": chat_id, "is_bot": False, "first_name": f"Person {chat_id}"}
        chat = {
            "id": user["id"],
            "first_name": user["first_name"],
            "type": "private",
        }
        if "username" in user:
            chat["username"] = user["username"]
        return {
            "update_id": update_id,
            "message": {
                "message_id": update_id % 1_000_000,
                "from": user,
                "chat": chat,
                "date": int(time.time()),
                "text": text,
            },
        }

    def press_button(self, message: SentMessage, text: str) -> dict[str, Any]:
        """A real-shaped Update for the local user pressing a button of a message's inline
        keyboard (a `callback_query`; its id is one `answerCallbackQuery` accepts once)."""
        return self.bot_api.press(message, text, user=self.user.as_telegram())

    def post_update(
        self, update: Mapping[str, Any], *, secret: str | None = None
    ) -> dict[str, Any]:
        """POST an update to the webhook handler as API Gateway would, and make the Bot API
        call its answer asks for as Telegram would (the sign of life); returns the answer."""
        event = http_event(
            json.dumps(update), secret=self.secret_token if secret is None else secret
        )
        response = self.invoke("webhook", event)
        self._perform_reply_method(response)
        return response

    def post_hook(
        self, name: str, body: bytes, headers: Mapping[str, str], *, method: str = "POST"
    ) -> dict[str, Any]:
        """POST an event to a hook's route (`/hooks/{name}`) of the webhook function, as API
        Gateway would (the body base64-encoded, as it passes any bytes); returns the answer."""
        return self.invoke("webhook", hook_http_event(name, body, headers, method=method))

    def invoke(self, name: str, event: dict[str, Any]) -> dict[str, Any]:
        """Run a function on one event, as Lambda would: one at a time (see __init__)."""
        with self._invocations[name]:
            response: dict[str, Any] = self.handlers[name].handler(event, self._context(name))
        return response

    def _invoke(self, logical_id: str, event: dict[str, Any]) -> dict[str, Any]:
        """The HTTP API's way in: the function a route names, by its logical id."""
        (name,) = [name for name, function in self.functions.items() if function == logical_id]
        return self.invoke(name, event)

    def _perform_reply_method(self, response: Mapping[str, Any]) -> None:
        """Make the Bot API call the webhook's answer asks for (its sign of life), as Telegram
        does on receiving it: once, saying nothing of the outcome. A refusal is only recorded
        in `reply_method_errors`. With real Telegram (`poll`) the poller makes it."""
        requested = reply_method(response)
        if requested is None or self._telegram_api_base is not None:
            return
        method, params = requested
        status, body = self.bot_api.perform(method, params)
        if status != 200:
            self.reply_method_errors.append((method, status, str(body.get("description"))))

    def process_queue(self, max_seconds: float = 600) -> None:
        """Run agent turns until the queue is empty (including retries of failed turns)."""
        self.poller.drain(max_seconds=max_seconds)

    def fire_due_schedules(self, at: datetime | None = None) -> list[tuple[str, datetime]]:
        """Fire every schedule due at `at` (default: now), as EventBridge Scheduler would."""
        if at is not None:
            self.schedule_clock = at
        return self.schedules.run_due()

    def _invoke_scheduler(self, event: dict[str, Any]) -> None:
        self.handlers["scheduler"].handler(event, self._context("scheduler"))

    def start_background(self, interval: float = 1.0) -> None:
        """Fire due schedules and run queued turns in a background thread (interactive chat)."""

        def work() -> None:
            while not self._worker_stop.is_set():
                try:
                    self.schedules.run_due()
                    while self.poller.poll_once():
                        pass
                except Exception:
                    logging.getLogger(__name__).exception("local worker failed; continuing")
                self._worker_stop.wait(interval)

        self._worker_stop.clear()
        self._worker = threading.Thread(target=work, name="local-worker", daemon=True)
        self._worker.start()

    def stop_background(self) -> None:
        if self._worker is not None:
            self._worker_stop.set()
            self._worker.join(timeout=30)
            self._worker = None

    def fire_heartbeat(self, at: datetime | None = None) -> dict[str, str]:
        """Invoke the scheduler as EventBridge Scheduler would for the heartbeat schedule."""
        schedule = self.template.template["Resources"]["HeartbeatSchedule"]["Properties"]
        scheduled = (at or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%SZ")
        raw_input = schedule["Target"]["Input"].replace("<aws.scheduler.scheduled-time>", scheduled)
        result: dict[str, str] = self.handlers["scheduler"].handler(
            json.loads(raw_input), self._context("scheduler")
        )
        return result


def http_event(
    body: str, *, secret: str | None, content_type: str = "application/json"
) -> dict[str, Any]:
    """An API Gateway HTTP API (payload format 2.0) request for the webhook route."""
    headers = {"content-type": content_type, "host": "local", "user-agent": "local"}
    if secret is not None:
        headers[SECRET_HEADER] = secret
    return {
        "version": "2.0",
        "routeKey": "POST /webhook",
        "rawPath": "/webhook",
        "rawQueryString": "",
        "headers": headers,
        "requestContext": {
            "http": {
                "method": "POST",
                "path": "/webhook",
                "protocol": "HTTP/1.1",
                "sourceIp": "149.154.167.220",
                "userAgent": "local",
            },
            "requestId": str(uuid.uuid4()),
            "routeKey": "POST /webhook",
            "stage": "$default",
            "timeEpoch": int(time.time() * 1000),
        },
        "body": body,
        "isBase64Encoded": False,
    }


def hook_http_event(
    name: str, body: bytes, headers: Mapping[str, str], *, method: str = "POST"
) -> dict[str, Any]:
    """An API Gateway HTTP API (payload format 2.0) request for a hook's route."""
    path = f"/hooks/{name}"
    return {
        "version": "2.0",
        "routeKey": "POST /hooks/{name}",
        "rawPath": path,
        "rawQueryString": "",
        "pathParameters": {"name": name},
        "headers": {"host": "local", **{key.lower(): value for key, value in headers.items()}},
        "requestContext": {
            "http": {"method": method, "path": path, "protocol": "HTTP/1.1", "sourceIp": "local"},
            "requestId": str(uuid.uuid4()),
            "routeKey": "POST /hooks/{name}",
            "stage": "$default",
            "timeEpoch": int(time.time() * 1000),
        },
        "body": base64.b64encode(body).decode(),
        "isBase64Encoded": True,
    }
