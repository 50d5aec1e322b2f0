"""`nanobot-lambda doctor`: is everything in place for the bot to answer? One check per part,
each a pass or a failure with its fix, run in the order a request travels.

With `--stack`, the functions' settings are checked as the stack gives them (its parameters,
its SSM secrets); without, the environment's (what `chat` and `poll` use). A stack that cannot
be read (no credentials, no such stack) is therefore reported first, and every check that
needs what it holds is skipped rather than failed on the environment's values. The model check
starts with its name (no request: litellm must know its provider), then makes a real one-token
completion, which costs a fraction of a cent.

With `--local`, the stack is the `chat` running on this machine (`LocalStackInfo`): its moto
server holds every resource, and its HTTP API takes the hooks' requests to the webhook
function; the model and MCP servers are the environment's, as the chat reads them. What the
local stack does not have is skipped: an AWS account, a bot of your own (the chat's Bot API
is its own), a webhook (the chat posts each update to the webhook function itself).
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Mapping
from contextlib import suppress
from dataclasses import dataclass
from typing import Any, Literal

from botocore.exceptions import BotoCoreError, ClientError

from nanobot_lambda.adapters.aws.errors import error_code
from nanobot_lambda.adapters.aws.workspace import S3Workspace
from nanobot_lambda.adapters.mcp.client import mcp_servers
from nanobot_lambda.adapters.telegram.client import TelegramBot, TelegramError
from nanobot_lambda.core.bot_commands import BOT_COMMANDS
from nanobot_lambda.core.errors import ConfigError, ModelError, StorageError, ToolError
from nanobot_lambda.core.remote_tools import ServerAccess
from nanobot_lambda.core.skills import load_skills
from nanobot_lambda.core.workspace import default_workspace_files
from nanobot_lambda.operator.local.state import LocalStackInfo
from nanobot_lambda.operator.ops.deployment import (
    BOT_TOKEN_PARAMETER,
    RESOURCES,
    STACK_OUTPUTS,
    Deployment,
    OperatorError,
    aws_setup_missing,
    describe_stack,
    fetch_reference,
)
from nanobot_lambda.operator.ops.webhook_admin import (
    WebhookInfo,
    command_menu_is_current,
    menu_button_opens,
    webhook_info,
)
from nanobot_lambda.settings import (
    AgentBehaviourSettings,
    AllowListSettings,
    ApprovalSettings,
    InputSettings,
    LlmSettings,
    McpSettings,
    OperatorSettings,
    OwnerSettings,
    SignOfLifeSettings,
    SpendSettings,
    WebSettings,
)

Status = Literal["ok", "FAIL", "warn", "skip"]

# The stack parameters behind the functions' settings, as infra/template.yaml wires them
# (a unit test checks each against the template).
STACK_SETTINGS = {
    "AllowFrom": "ALLOW_FROM",
    "LlmModel": "LLM_MODEL",
    "LlmApiBase": "LLM_API_BASE",
    "LlmApiKeyParameter": "LLM_API_KEY_PARAM",
    "LlmFallbackModels": "LLM_FALLBACK_MODELS",
    "HeartbeatModel": "HEARTBEAT_MODEL",
    "ConsolidationModel": "CONSOLIDATION_MODEL",
    "Timezone": "TIMEZONE",
    "MaxToolIterations": "MAX_TOOL_ITERATIONS",
    "HistoryWindow": "HISTORY_WINDOW",
    "GroupPolicy": "GROUP_POLICY",
    "TranscriptionModel": "TRANSCRIPTION_MODEL",
    "TtsModel": "TTS_MODEL",
    "TranscriptionApiKeyParameter": "TRANSCRIPTION_API_KEY_PARAM",
    "AckReaction": "ACK_REACTION",  # the webhook's
    "OwnerId": "OWNER_ID",  # also behind ALLOW_FROM's default owner
    "SpendLimitDailyUsd": "SPEND_LIMIT_DAILY_USD",
    "SpendLimitMonthlyUsd": "SPEND_LIMIT_MONTHLY_USD",
    "SpendLimitPersonDailyUsd": "SPEND_LIMIT_PERSON_DAILY_USD",
    "SpendLimitPersonMonthlyUsd": "SPEND_LIMIT_PERSON_MONTHLY_USD",
    "McpServers": "MCP_SERVERS",
    "Approvals": "APPROVALS",
    "ApprovalTimeoutMinutes": "APPROVAL_TIMEOUT_MINUTES",
    "WebFetchAllowNetworks": "WEB_FETCH_ALLOW_NETWORKS",
}
CHECKED_SETTINGS = (
    LlmSettings,
    OwnerSettings,
    SpendSettings,
    AgentBehaviourSettings,
    InputSettings,
    SignOfLifeSettings,
    McpSettings,
    ApprovalSettings,
)
MCP_LIST_SECONDS = 10.0
STABLE_STATUSES = ("CREATE_COMPLETE", "UPDATE_COMPLETE", "IMPORT_COMPLETE")
# How the local stack's check finds each of its resources (RESOURCES' names) on its moto server.
LOCAL_PROBES: dict[str, Callable[[Deployment, str], Any]] = {
    "workspace_bucket": lambda target, name: target.client("s3").head_bucket(Bucket=name),
    "sessions_table": lambda target, name: target.client("dynamodb").describe_table(TableName=name),
    "turn_queue_url": lambda target, url: target.client("sqs").get_queue_attributes(
        QueueUrl=url, AttributeNames=["QueueArn"]
    ),
    "turn_dlq_url": lambda target, url: target.client("sqs").get_queue_attributes(
        QueueUrl=url, AttributeNames=["QueueArn"]
    ),
    "jobs_table": lambda target, name: target.client("dynamodb").describe_table(TableName=name),
    "schedule_group": lambda target, name: target.client("scheduler").get_schedule_group(Name=name),
}
# A hook name to ask the hooks' route for: the webhook function answers it (404 "no such hook",
# or 401 if someone made it), where a route that is not there gets API Gateway's own 404.
PROBE_HOOK = "doctor-check"
HTTP_SECONDS = 10.0


@dataclass(frozen=True)
class Check:
    name: str
    status: Status
    detail: str
    fix: str | None = None


def _ok(name: str, detail: str) -> Check:
    return Check(name, "ok", detail)


def _fail(name: str, detail: str, fix: str) -> Check:
    return Check(name, "FAIL", detail, fix)


def _aws_fail(name: str, doing: str, error: BaseException, fix: str) -> Check:
    """A check that AWS failed: no credentials or no region said as every command says it
    (`aws_setup_missing`, also behind an adapter's StorageError), any other error as it came,
    with `fix`."""
    cause = error.__cause__ if isinstance(error, StorageError) else None
    missing = aws_setup_missing(cause or error)
    if missing is not None:
        return _fail(name, f"{doing}{missing[0]}", missing[1])
    return _fail(name, f"{doing}{error}", fix)


def _skip(name: str, detail: str) -> Check:
    return Check(name, "skip", detail)


def _warn(name: str, detail: str, fix: str) -> Check:
    """In place, but by a choice the operator should know they made (no failure)."""
    return Check(name, "warn", detail, fix)


class Doctor:
    def __init__(
        self,
        environ: Mapping[str, str],
        stack_name: str | None,
        local: LocalStackInfo | None = None,
    ) -> None:
        self._environ = environ
        self._stack_name = stack_name
        self._local = local
        self._deployment: Deployment | None = None
        self._llm: LlmSettings | None = None
        self._mcp: McpSettings | None = None
        self._owner: OwnerSettings | None = None
        self._environment: dict[str, str] = {}
        self._bot: TelegramBot | None = None
        self._no_credentials = False

    @property
    def _stack_flag(self) -> str:
        if self._local is not None:
            return "--local"
        return f"--stack {self._stack_name}" if self._stack_name else "--stack NAME"

    def run(self) -> Iterator[Check]:
        """The checks, each yielded as soon as it is done (the caller prints progress)."""
        operator_settings = self.connect()
        yield self.aws_credentials()
        yield self.stack()
        yield self.configuration(operator_settings)
        yield self.model()
        yield self.mcp_servers()
        yield self.bot_token()
        yield self.webhook()
        yield self.command_menu()
        yield self.console()
        yield self.workspace()

    def _stack_unreadable(self) -> bool:
        return bool(self._stack_name) and (self._deployment is None or not self._deployment.stack)

    # -- configuration --------------------------------------------------------------------

    def _function_environment(self) -> dict[str, str]:
        if self._deployment is None or self._deployment.stack is None:
            return dict(self._environ)
        parameters = self._deployment.stack.parameters
        return {
            variable: parameters[parameter]
            for parameter, variable in STACK_SETTINGS.items()
            if parameter in parameters
        }

    def connect(self) -> ConfigError | None:
        """Read the stack (with --stack), quietly: the checks report what failed. The operator's
        own settings' error, if any, is the configuration check's."""
        try:
            settings = OperatorSettings.from_env(self._environ, fetch=fetch_reference)
        except ConfigError as error:
            self._deployment = Deployment(OperatorSettings.model_validate({}))
            return error
        self._deployment = Deployment(settings)
        if self._local is not None:
            self._deployment = self._local.deployment()
        if self._stack_name:
            with suppress(OperatorError, ClientError, BotoCoreError):
                self._deployment = Deployment.connect(self._stack_name, settings)
        return None

    def configuration(self, operator_error: ConfigError | None = None) -> Check:
        name = "configuration"
        if operator_error is not None:
            return _fail(name, str(operator_error), "fix those variables (environment or .env)")
        if self._stack_unreadable():
            # The environment's values are not the stack's: judging them would mislead.
            return _skip(name, "the stack could not be read (see above)")
        environment = self._environment = self._function_environment()
        problems = []
        for model in CHECKED_SETTINGS:
            if model not in (LlmSettings, McpSettings) and self._stack_name is None:
                # Locally only the model and MCP servers count (chat); poll asks for ALLOW_FROM.
                continue
            try:
                validated = model.from_env(environment, fetch=fetch_reference)
            except ConfigError as error:
                problems.append(str(error).split(": ", 1)[-1])
                continue
            if isinstance(validated, LlmSettings):
                self._llm = validated
            if isinstance(validated, McpSettings):
                self._mcp = validated
            if isinstance(validated, OwnerSettings):
                self._owner = validated
            if isinstance(validated, AllowListSettings) and validated.allow_from.allows_nobody:
                problems.append("ALLOW_FROM is empty: nobody may talk to the bot")
            elif isinstance(validated, OwnerSettings) and validated.owner is None:
                problems.append(
                    "no owner: ALLOW_FROM lists no user id and OWNER_ID is unset, so every chat "
                    "shares the owner's workspace and memory"
                )
        if problems:
            return _fail(name, "; ".join(problems), self._configuration_fix(problems))
        where = "the stack's parameters" if self._stack_name else "the environment"
        return _ok(name, f"settings from {where} are valid")

    def _configuration_fix(self, problems: list[str]) -> str:
        text = " ".join(problems)
        if self._stack_name:
            parameters = [p for p, variable in STACK_SETTINGS.items() if variable in text]
            named = ", ".join(parameters) or "the parameters named above"
            return f"redeploy with corrected {named}: sam deploy --guided"
        return "set the variables named above (environment or .env; see README, Configuration)"

    # -- AWS ------------------------------------------------------------------------------

    def aws_credentials(self) -> Check:
        name = "AWS credentials"
        if self._local is not None:
            moto = self._local.endpoint_url
            return _skip(name, f"the local stack's AWS is its moto server, {moto}")
        if self._stack_name is None:
            return _skip(name, "no --stack given (the local stack needs no AWS account)")
        assert self._deployment is not None
        try:
            identity = self._deployment.client("sts").get_caller_identity()
        except (ClientError, BotoCoreError) as error:
            self._no_credentials = True
            return _aws_fail(
                name, "", error, "refresh your credentials (aws sso login, or new keys)"
            )
        return _ok(name, f"{identity['Arn']} (account {identity['Account']})")

    def stack(self) -> Check:
        name = "stack"
        if self._local is not None:
            return self.local_stack(self._local)
        if self._stack_name is None:
            return _skip(name, "no --stack given")
        if self._no_credentials:
            return _skip(name, "cannot be read without AWS credentials and a region (see above)")
        assert self._deployment is not None
        try:
            stack = describe_stack(self._stack_name, self._deployment.client("cloudformation"))
        except OperatorError as error:
            return _fail(name, str(error).split(":")[0], str(error).split(": ", 1)[-1])
        except (ClientError, BotoCoreError) as error:
            return _aws_fail(name, "", error, "check the AWS credentials and region")
        if stack.status not in STABLE_STATUSES:
            return _fail(
                name,
                f"{stack.name} is {stack.status}",
                "see its events (aws cloudformation describe-stack-events) and redeploy",
            )
        missing = [output for output in STACK_OUTPUTS if not stack.outputs.get(output)]
        if missing:
            return _fail(
                name,
                f"{stack.name} has no output {', '.join(missing)}",
                "deploy the current template (sam build && sam deploy)",
            )
        return _ok(name, f"{stack.name} is {stack.status}, every output present")

    def local_stack(self, local: LocalStackInfo) -> Check:
        """The chat's stack: each resource on its moto server, and the hooks' route answered
        by the webhook function."""
        name = "stack"
        assert self._deployment is not None
        chat = f"the chat's local stack (process {local.pid})"
        again = "start `make chat` (or `nanobot-lambda chat`) again"
        missing = []
        for resource, probe in LOCAL_PROBES.items():
            value = local.resources.get(resource)
            try:
                if value is None:
                    raise LookupError(resource)
                probe(self._deployment, value)
            except ClientError as error:
                missing.append(f"{RESOURCES[resource][0]} ({error_code(error)})")
            except LookupError:
                missing.append(f"{RESOURCES[resource][0]} (not announced)")
            except BotoCoreError as error:
                return _fail(name, f"{chat}: its moto server does not answer ({error})", again)
        if missing:
            return _fail(name, f"{chat} has no {', '.join(missing)}", again)
        if local.hooks_url is None:
            return _fail(name, f"{chat} announced no hooks URL (an older chat)", again)
        problem = hooks_route_problem(local.hooks_url)
        if problem is not None:
            return _fail(name, f"{chat}: {local.hooks_url}/NAME {problem}", again)
        return _ok(
            name,
            f"{chat} at {local.endpoint_url}, every resource present; "
            f"hooks at {local.hooks_url}/NAME reach the webhook function",
        )

    # -- model ----------------------------------------------------------------------------

    def model(self) -> Check:
        name = "model"
        if self._stack_unreadable():
            return _skip(name, "the stack could not be read")
        if self._llm is None:
            return _skip(name, "its settings are not valid (see configuration)")
        key = "LlmApiKeyParameter" if self._stack_name else "LLM_API_KEY"
        model, base = self._setting("LLM_MODEL"), self._setting("LLM_API_BASE")
        general_fix = f"check {model} (a litellm model string), the key in {key}, and {base}"
        from nanobot_lambda.adapters.llm.model_errors import model_name_problems

        if problems := model_name_problems(self._llm):  # no request needed to know these
            settings = [self._setting(variable) for variable, _ in problems]
            return _fail(
                name,
                "; ".join(problem for _, problem in problems),
                f"set {', '.join(dict.fromkeys(settings))} to a litellm model string",
            )
        if bedrock := self._bedrock_grant_problem():
            return bedrock
        try:
            one_token_completion(self._llm)
        except ModelError as error:
            return _fail(name, str(error), error.setup_problem or general_fix)
        except Exception as error:  # not the adapter's: a bug to see in full
            return _fail(name, f"{self._llm.llm_model}: {error!r}", general_fix)
        return _ok(name, f"{self._llm.llm_model} answered a one-token request")

    def _setting(self, variable: str) -> str:
        """How the operator sets `variable`: its stack parameter with --stack."""
        if self._stack_name is None:
            return variable
        parameters = {variable: parameter for parameter, variable in STACK_SETTINGS.items()}
        return parameters.get(variable, variable)

    def _bedrock_grant_problem(self) -> Check | None:
        """A deployed Bedrock model needs BedrockModelArns: the one-token request below is the
        operator's own credentials', which say nothing of the function's role."""
        if self._deployment is None or self._deployment.stack is None or self._llm is None:
            return None
        bedrock = [
            model
            for model in (self._llm.llm_model, *self._llm.llm_fallback_models)
            if model.startswith("bedrock/")
        ]
        if not bedrock:
            return None
        granted = self._deployment.stack.parameters.get("BedrockModelArns", "")
        ungranted = [model for model in bedrock if model.rsplit("/", 1)[-1] not in granted]
        if not ungranted:
            return None
        return _fail(
            "model",
            f"AgentTurnFunction may not invoke {', '.join(ungranted)}: no ARN in "
            f"BedrockModelArns names it ({granted or 'empty'})",
            "redeploy with the model's foundation-model or inference-profile ARN in "
            "BedrockModelArns (README, Deploy: Bedrock)",
        )

    def mcp_servers(self) -> Check:
        """Each remote MCP server (MCP_SERVERS): whether it answers, its tool count and who may
        use it; a warning for a server whose header secrets serve others than the owner."""
        name = "MCP servers"
        if self._mcp is None:
            return _skip(name, "their settings are not valid (see configuration)")
        if not self._mcp.mcp_servers:
            return _ok(name, "none configured")
        where = "McpServers" if self._stack_name else "MCP_SERVERS"
        try:
            networks = WebSettings.from_env(self._environment, fetch=fetch_reference)
            servers = mcp_servers(
                self._mcp.mcp_servers, networks.web_fetch_allow_networks, fetch_reference
            )
        except Exception as error:
            return _fail(
                name,
                f"a header secret could not be read ({type(error).__name__})",
                f"create the SSM parameters or secrets that {where} names, under nanobot/mcp/",
            )
        found, failed, shared = [], [], []
        for config, server in zip(self._mcp.mcp_servers, servers, strict=True):
            who = self._describe_access(config.access)
            try:
                tools = server.list_tools(min(server.timeout_seconds, MCP_LIST_SECONDS))
            except ToolError as error:
                failed.append(f"{server.name} (for {who}): {error}")
                continue
            allowed = server.allowed_tools
            count = len([tool for tool in tools if allowed is None or tool.name in allowed])
            found.append(f"{server.name}: {count} tool{'' if count == 1 else 's'}, for {who}")
            if config.access != "owner" and config.secret_headers:
                headers = ", ".join(config.secret_headers)
                shared.append(f"{server.name} shares its secret header {headers} with {who}")
        if failed:
            return _fail(
                name,
                "; ".join([*failed, *found]),
                f"check the URL and headers in {where}; a private address needs "
                "WebFetchAllowNetworks (WEB_FETCH_ALLOW_NETWORKS)",
            )
        if shared:
            return _warn(
                name,
                "; ".join([*found, *shared]),
                "everyone a server is opened to acts with its credential; unless that is meant, "
                f'set "access": "owner" in {where} and drop "share_secret_headers"',
            )
        return _ok(name, "; ".join(found))

    def _describe_access(self, access: ServerAccess) -> str:
        """Who may use a server, as `doctor` shows it (core/remote_tools.py decides it)."""
        if isinstance(access, frozenset):
            return "chats " + ", ".join(str(chat) for chat in sorted(access))
        if access == "allowed" and self._owner is not None and self._owner.allow_from.everyone:
            return "everyone (ALLOW_FROM is *)"
        if access == "allowed":
            return "everyone allowed (ALLOW_FROM ids, approved people)"
        if self._owner is None:  # the local settings: ALLOW_FROM is the local stack's
            return "the owner only"
        if self._owner.owner is None:
            return "nobody (no owner: set OWNER_ID)"
        return f"the owner only ({self._owner.owner})"

    # -- Telegram -------------------------------------------------------------------------

    def bot_token(self) -> Check:
        name = "bot token"
        if self._local is not None:
            return _skip(name, "the local stack's Bot API is the chat's own")
        if self._stack_unreadable():
            return _skip(name, "the stack could not be read")
        assert self._deployment is not None
        if self._stack_name is None and self._deployment.settings.telegram_bot_token is None:
            return _skip(name, "no --stack and no TELEGRAM_BOT_TOKEN (only poll needs one)")
        where = (
            f"the SSM parameter {self._deployment.parameter_name(BOT_TOKEN_PARAMETER)}"
            if self._stack_name
            else "TELEGRAM_BOT_TOKEN"
        )
        try:
            bot = self._deployment.telegram()
            me = bot.get_me()
        except OperatorError as error:
            return _fail(name, str(error).split(":")[0], str(error).split(": ", 1)[-1])
        except TelegramError as error:
            if error.status in (401, 404):
                return _fail(
                    name,
                    f"Telegram refused the token ({error.status} {error.description})",
                    f"put the token @BotFather gave you in {where}",
                )
            return _fail(name, str(error), "check the network (and TELEGRAM_API_BASE if set)")
        except (ClientError, BotoCoreError) as error:
            return _aws_fail(name, f"cannot read {where}: ", error, "check the AWS credentials")
        self._bot = bot
        return _ok(name, f"@{me.username} (id {me.id})")

    def webhook(self) -> Check:
        name = "webhook"
        if self._local is not None:
            return _skip(name, "the chat posts each update to the webhook function itself")
        if self._bot is None:
            return _skip(name, "no working bot token")
        try:
            info = webhook_info(self._bot)
        except TelegramError as error:
            return _fail(name, str(error), "check the network and try again")
        expected = self._deployment.webhook_url if self._deployment else None
        return self._judge_webhook(info, expected)

    def _judge_webhook(self, info: WebhookInfo, expected: str | None) -> Check:
        name = "webhook"
        set_it = f"nanobot-lambda webhook set {self._stack_flag}"
        if expected is None:
            if not info.url:
                return _ok(name, "none set: updates wait for getUpdates (nanobot-lambda poll)")
            return _ok(name, f"set to {info.url} (no stack to compare with)")
        if not info.url:
            return _fail(name, "no webhook is set: Telegram does not call the stack", set_it)
        if info.url != expected:
            return _fail(name, f"set to {info.url}, not the stack's {expected}", set_it)
        if info.allowed_updates is not None and "message" not in info.allowed_updates:
            return _fail(name, "messages are not among its allowed_updates", set_it)
        if info.recent_error() and info.last_error_at is not None:
            when = info.last_error_at.strftime("%Y-%m-%d %H:%M UTC")
            return _fail(
                name,
                f"Telegram reported at {when}: {info.last_error_message}",
                f"read the webhook function's logs (sam logs -n WebhookFunction "
                f"{self._stack_flag.replace('--stack', '--stack-name')}); on 401 Unauthorized, "
                f"re-register the secret: {set_it}",
            )
        return _ok(name, f"set to the stack's URL, {info.pending_update_count} pending")

    def command_menu(self) -> Check:
        name = "command menu"
        if self._local is not None:
            return _skip(name, "the local stack's Bot API is the chat's own")
        if self._bot is None:
            return _skip(name, "no working bot token")
        try:
            current = command_menu_is_current(self._bot)
        except TelegramError as error:
            return _fail(name, str(error), "check the network and try again")
        if not current and (self._deployment is None or self._deployment.stack is None):
            return _skip(name, "not set: `nanobot-lambda webhook set` sets it with the webhook")
        if not current:
            return _fail(
                name,
                "Telegram's menu is not the commands /help lists",
                f"nanobot-lambda webhook set {self._stack_flag} (it sets the menu too)",
            )
        return _ok(name, " ".join(f"/{command}" for command, _ in BOT_COMMANDS))

    def console(self) -> Check:
        """The console's route (its page, and its API refusing a request without launch
        data: the console function answers both) and, deployed, the private chats' menu button
        that opens it."""
        name = "console"
        if self._local is not None:
            url = self._local.console_url
            if url is None:
                return _skip(name, "the chat's stack has none (EnableConsole=false)")
        elif self._deployment is None or self._deployment.stack is None:
            return _skip(name, "no stack to read its ConsoleUrl from")
        else:
            url = self._deployment.console_url
            if url is None:
                return _skip(name, "the stack has none (EnableConsole=false)")
        problem = console_route_problem(url)
        if problem is not None:
            redeploy = "start `make chat` again" if self._local else "sam build && sam deploy"
            return _fail(name, f"{url} {problem}", redeploy)
        if self._local is not None or self._bot is None:
            return _ok(name, f"{url}: its page and its API answer")
        try:
            opens = menu_button_opens(self._bot)
        except TelegramError as error:
            return _fail(name, str(error), "check the network and try again")
        if opens != url:
            return _fail(
                name,
                f"its page and API answer at {url}, but the private chats' menu button "
                + (f"opens {opens}" if opens else "opens no console"),
                f"nanobot-lambda webhook set {self._stack_flag} (it sets the menu button too)",
            )
        return _ok(name, f"{url}: its page and API answer; the menu button opens it")

    # -- workspace ------------------------------------------------------------------------

    def workspace(self) -> Check:
        name = "workspace"
        if self._stack_unreadable():
            return _skip(name, "the stack could not be read")
        assert self._deployment is not None
        bucket = self._deployment.resource("workspace_bucket")
        if not bucket:
            return _skip(name, "no --stack given and WORKSPACE_BUCKET is not set")
        workspace = S3Workspace(bucket, self._deployment.client("s3"))
        try:
            present = {entry.path for entry in workspace.list_files("")}
            missing = sorted(set(default_workspace_files()) - present)
            skill_files = {
                path: file.text
                for path in sorted(present)
                if path.startswith("skills/") and path.endswith("/SKILL.md")
                if (file := workspace.read(path)) is not None
            }
        except (ClientError, BotoCoreError, StorageError) as error:
            return _aws_fail(
                name, f"cannot read bucket {bucket}: ", error, "check the AWS credentials"
            )
        if missing:
            return _fail(
                name,
                f"missing {', '.join(missing)}",
                f"write the defaults (existing files are kept): nanobot-lambda onboard "
                f"{self._stack_flag}",
            )
        skills = [
            skill for skill in load_skills(skill_files, environ={}) if skill.source == "workspace"
        ]
        broken = [f"{skill.location}: {skill.error}" for skill in skills if skill.error]
        if broken:
            return _fail(
                name,
                "; ".join(broken),
                "fix the frontmatter: nanobot-lambda workspace pull DIR, edit, workspace push DIR",
            )
        # Read leniently (e.g. an unquoted colon in a description): usable, so it parses.
        warnings = "".join(
            f"; warning: {skill.location}: {skill.warning}" for skill in skills if skill.warning
        )
        return _ok(
            name, f"default files present, {len(skill_files)} workspace skill(s) parse{warnings}"
        )


def hooks_route_problem(hooks_url: str) -> str | None:
    """What is wrong with the hooks' route at `hooks_url`, None when the webhook function
    answers it: an unsigned event for a hook that should not exist is refused by the function
    (a JSON body with `ok`), where API Gateway's own 404 has none."""
    request = urllib.request.Request(  # noqa: S310 - the hooks' URL the chat announced
        f"{hooks_url.rstrip('/')}/{PROBE_HOOK}", data=b"{}", method="POST"
    )
    try:
        with urllib.request.urlopen(request, timeout=HTTP_SECONDS) as response:  # noqa: S310
            status, body = response.status, response.read()
    except urllib.error.HTTPError as error:
        status, body = error.code, error.read()
    except (urllib.error.URLError, OSError) as error:
        return f"cannot be reached ({getattr(error, 'reason', error)})"
    try:
        answer = json.loads(body)
    except ValueError:
        answer = None
    answered = isinstance(answer, dict) and "ok" in answer
    if status in (401, 404) and answered:
        return None
    return f"is not answered by the webhook function (HTTP {status})"


def console_route_problem(console_url: str) -> str | None:
    """What is wrong with the console at `console_url`, None when its function answers: the
    page (HTML under its Content-Security-Policy), and its API refusing a request that carries
    no launch data (401 with the function's JSON, where API Gateway's own 404 has none)."""
    try:
        with urllib.request.urlopen(console_url, timeout=HTTP_SECONDS) as response:  # noqa: S310
            page_status = response.status
            page_type = response.headers.get("Content-Type", "")
            policy = response.headers.get("Content-Security-Policy", "")
    except urllib.error.HTTPError as error:
        return f"does not serve the page (HTTP {error.code})"
    except (urllib.error.URLError, OSError) as error:
        return f"cannot be reached ({getattr(error, 'reason', error)})"
    if page_status != 200 or not page_type.startswith("text/html") or "default-src" not in policy:
        return f"does not serve the console's page (HTTP {page_status}, {page_type or 'no type'})"
    request = urllib.request.Request(  # noqa: S310 - the console's own URL
        f"{console_url.rstrip('/')}/api/me", data=b"{}", method="POST"
    )
    try:
        with urllib.request.urlopen(request, timeout=HTTP_SECONDS) as response:  # noqa: S310
            status, body = response.status, response.read()
    except urllib.error.HTTPError as error:
        status, body = error.code, error.read()
    except (urllib.error.URLError, OSError) as error:
        return f"its API cannot be reached ({getattr(error, 'reason', error)})"
    try:
        answer = json.loads(body)
    except ValueError:
        answer = None
    if status == 401 and isinstance(answer, dict) and "error" in answer:
        return None
    return f"its API does not refuse a request without launch data (HTTP {status})"


def one_token_completion(settings: LlmSettings) -> None:
    """A real call to the model, one token long. litellm is imported here, only here."""
    from nanobot_lambda.adapters.llm.litellm_model import LitellmChatModel
    from nanobot_lambda.core.model import CompletionRequest

    quick = settings.model_copy(  # the model itself: a fallback answering would hide it
        update={
            "llm_max_tokens": 1,
            "llm_num_retries": 0,
            "llm_timeout_seconds": 60,
            "llm_fallback_models": (),
        }
    )
    LitellmChatModel(quick).complete(CompletionRequest([{"role": "user", "content": "Say OK."}]))


def summarize(checks: list[Check]) -> str:
    failed = sum(check.status == "FAIL" for check in checks)
    if failed:
        return f"{failed} check{'s' if failed > 1 else ''} failed."
    warned = sum(check.status == "warn" for check in checks)
    if warned:
        return f"Everything checked is in place; see {warned} warning{'s' if warned > 1 else ''}."
    return "Everything checked is in place."
