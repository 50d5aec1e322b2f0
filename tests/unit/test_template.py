"""infra/template.yaml: the properties the deployed system relies on, read by the local evaluator.

cfn-lint checks that the template is valid CloudFormation; these tests check that it is *ours*:
queue timing, FIFO and redrive, layer placement, least privilege, the bucket's protections, the
heartbeat wiring, and that every function's environment satisfies its settings class.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, get_args

import pytest

from nanobot_lambda.adapters.aws import metrics as emf
from nanobot_lambda.core import telemetry
from nanobot_lambda.functions.keep_warm import KEEP_WARM_EVENT
from nanobot_lambda.operator.local.cfn import QueueMapping, TemplateContext, load_template
from nanobot_lambda.settings import (
    AgentSettings,
    ConsoleSettings,
    SchedulerSettings,
    WebhookSettings,
)

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE_PATH = ROOT / "infra" / "template.yaml"
ENV_EXAMPLE_PATH = ROOT / "events" / "env.example.json"

REGION, ACCOUNT = "us-east-1", "123456789012"
TURN_QUEUE_URL = f"https://sqs.{REGION}.amazonaws.com/{ACCOUNT}/nanobot-TurnQueue-X.fifo"
DLQ_URL = f"https://sqs.{REGION}.amazonaws.com/{ACCOUNT}/nanobot-TurnDeadLetterQueue-X.fifo"

# Values for the parameters that have no default (a guided deploy asks for them).
REQUIRED_PARAMETERS = {"AllowFrom": "111111111", "LlmModel": "openai/gpt-4.1-mini"}

# What Ref / GetAtt yield once deployed, for the resources the evaluated properties mention.
REFS = {
    "TurnQueue": TURN_QUEUE_URL,
    "TurnDeadLetterQueue": DLQ_URL,
    "WorkspaceBucket": "nanobot-workspacebucket-x",
    "SessionsTable": "nanobot-SessionsTable-X",
    "JobsTable": "nanobot-JobsTable-X",
    "IdempotencyTable": "nanobot-IdempotencyTable-X",
    "ScheduleGroup": "ScheduleGroup-X",
    "SchedulerFunction": "nanobot-SchedulerFunction-X",
    "WebhookFunction": "nanobot-WebhookFunction-X",
    "ServerlessHttpApi": "api-x",  # SAM's implicit HTTP API (the hooks' URL in agent_turn)
    "AgentTurnFunction": "nanobot-AgentTurnFunction-X",
    "SandboxFunction": "nanobot-sandbox",
    "SandboxLogGroup": "/aws/lambda/nanobot-sandbox",
    "WebhookLogGroup": "/aws/lambda/nanobot-webhook",
    "AgentTurnLogGroup": "/aws/lambda/nanobot-agent-turn",
    "SchedulerLogGroup": "/aws/lambda/nanobot-scheduler",
    "ConsoleLogGroup": "/aws/lambda/nanobot-console",
    "AlarmTopic": f"arn:aws:sns:{REGION}:{ACCOUNT}:nanobot-AlarmTopic-X",
    "CoreLayer": f"arn:aws:lambda:{REGION}:{ACCOUNT}:layer:nanobot-core:1",
    "LlmLayer": f"arn:aws:lambda:{REGION}:{ACCOUNT}:layer:nanobot-llm:1",
}
ATTRIBUTES = {
    ("TurnQueue", "Arn"): f"arn:aws:sqs:{REGION}:{ACCOUNT}:nanobot-TurnQueue-X.fifo",
    ("TurnQueue", "QueueName"): "nanobot-TurnQueue-X.fifo",
    ("TurnDeadLetterQueue", "Arn"): f"arn:aws:sqs:{REGION}:{ACCOUNT}:nanobot-Dlq-X.fifo",
    ("TurnDeadLetterQueue", "QueueName"): "nanobot-Dlq-X.fifo",
    ("WorkspaceBucket", "Arn"): "arn:aws:s3:::nanobot-workspacebucket-x",
    ("SessionsTable", "Arn"): f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/nanobot-SessionsTable-X",
    ("IdempotencyTable", "Arn"): (
        f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/nanobot-IdempotencyTable-X"
    ),
    ("JobsTable", "Arn"): f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/nanobot-JobsTable-X",
    ("SchedulerFunction", "Arn"): (
        f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:nanobot-SchedulerFunction-X"
    ),
    ("SchedulerInvokeRole", "Arn"): f"arn:aws:iam::{ACCOUNT}:role/nanobot-SchedulerInvokeRole-X",
    ("ConsoleFunction", "Arn"): f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:nanobot-Console-X",
    ("KeepWarmInvokeRole", "Arn"): f"arn:aws:iam::{ACCOUNT}:role/nanobot-KeepWarmInvokeRole-X",
    ("AgentTurnFunction", "Arn"): (
        f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:nanobot-AgentTurnFunction-X"
    ),
    ("SandboxFunction", "Arn"): f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:nanobot-sandbox",
    ("SandboxLogGroup", "Arn"): (
        f"arn:aws:logs:{REGION}:{ACCOUNT}:log-group:/aws/lambda/nanobot-sandbox:*"
    ),
    ("SandboxRole", "Arn"): f"arn:aws:iam::{ACCOUNT}:role/nanobot-SandboxRole-X",
}

FUNCTION_SETTINGS = [
    ("WebhookFunction", WebhookSettings),
    ("AgentTurnFunction", AgentSettings),
    ("SchedulerFunction", SchedulerSettings),
    ("ConsoleFunction", ConsoleSettings),
]

# Variables the template sets for libraries rather than for nanobot_lambda.settings.
THIRD_PARTY_VARIABLES = (
    "POWERTOOLS_SERVICE_NAME",
    "POWERTOOLS_LOG_LEVEL",
    "POWERTOOLS_METRICS_NAMESPACE",
    "LITELLM_LOCAL_MODEL_COST_MAP",
    "TIKTOKEN_CACHE_DIR",
)

# What an SQS event source mapping needs from its function's role.
CONSUME_ACTIONS = (
    "sqs:ReceiveMessage",
    "sqs:DeleteMessage",
    "sqs:GetQueueAttributes",
    "sqs:ChangeMessageVisibility",
)

# Lambda's default when neither the function nor Globals set a Timeout.
LAMBDA_DEFAULT_TIMEOUT = 3
SQS_DEFAULT_RETENTION_SECONDS = 345_600


@pytest.fixture(scope="module")
def template() -> dict[str, Any]:
    return load_template(TEMPLATE_PATH)


def make_context(template: dict[str, Any], **parameters: str) -> TemplateContext:
    return TemplateContext(
        template,
        parameters={**REQUIRED_PARAMETERS, **parameters},
        refs=dict(REFS),
        attributes=dict(ATTRIBUTES),
    )


def properties(template: dict[str, Any], logical_id: str) -> dict[str, Any]:
    resource = template["Resources"][logical_id]
    return dict(resource.get("Properties", {}))


def function_setting(template: dict[str, Any], logical_id: str, name: str, default: Any) -> Any:
    """A function property, falling back to Globals.Function as SAM does."""
    own = properties(template, logical_id)
    if name in own:
        return own[name]
    return template.get("Globals", {}).get("Function", {}).get(name, default)


def function_layers(template: dict[str, Any], logical_id: str) -> list[Any]:
    """SAM appends the function's Layers to the Globals' ones."""
    global_layers = template.get("Globals", {}).get("Function", {}).get("Layers", [])
    return [*global_layers, *properties(template, logical_id).get("Layers", [])]


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def iam_statements(node: Any) -> Iterator[dict[str, Any]]:
    """Every IAM statement anywhere below node, in both branches of any Fn::If."""
    if isinstance(node, list):
        for item in node:
            yield from iam_statements(item)
    elif isinstance(node, dict):
        statements = node.get("Statement")
        if isinstance(statements, list | dict):
            for statement in as_list(statements):
                if isinstance(statement, dict) and "Effect" in statement:
                    yield statement
        for value in node.values():
            yield from iam_statements(value)


def test_required_parameters_are_known(template: dict[str, Any]) -> None:
    # The other tests evaluate the template with REQUIRED_PARAMETERS: a new parameter without a
    # default must get a sample value here (and in a guided deploy, an answer).
    without_default = {
        name for name, spec in template["Parameters"].items() if "Default" not in spec
    }
    assert without_default == set(REQUIRED_PARAMETERS)


def test_turn_queue_visibility_timeout_is_six_agent_timeouts(template: dict[str, Any]) -> None:
    # AWS's guidance for an SQS event source: at least 6x the function timeout, or a slow or
    # retried turn becomes visible again and a second agent turn answers the same message.
    timeout = int(
        function_setting(template, "AgentTurnFunction", "Timeout", LAMBDA_DEFAULT_TIMEOUT)
    )
    visibility = int(properties(template, "TurnQueue")["VisibilityTimeout"])
    assert visibility >= 6 * timeout, f"VisibilityTimeout {visibility} < 6 x Timeout {timeout}"


def test_turn_queues_are_fifo(template: dict[str, Any]) -> None:
    for logical_id in ("TurnQueue", "TurnDeadLetterQueue"):
        queue = properties(template, logical_id)
        assert queue.get("FifoQueue") is True, logical_id
    # Deduplication ids are the Telegram update ids the webhook sets, not the body's hash.
    assert properties(template, "TurnQueue").get("ContentBasedDeduplication") is False


def test_turn_queue_redrives_to_dead_letter_queue(template: dict[str, Any]) -> None:
    redrive = properties(template, "TurnQueue")["RedrivePolicy"]
    assert redrive["deadLetterTargetArn"] == {"Fn::GetAtt": ["TurnDeadLetterQueue", "Arn"]}
    # One parameter sets both the redrive and what agent_turn counts as the last attempt.
    assert redrive["maxReceiveCount"] == {"Ref": "MaxReceiveCount"}
    variables = properties(template, "AgentTurnFunction")["Environment"]["Variables"]
    assert variables["TURN_MAX_RECEIVE_COUNT"] == {"Ref": "MaxReceiveCount"}
    assert 1 <= int(template["Parameters"]["MaxReceiveCount"]["Default"]) <= 10
    # A FIFO message keeps its enqueue time in the DLQ: a DLQ retention no longer than the
    # source queue's would expire failed turns as soon as they arrive.
    turn_queue = properties(template, "TurnQueue")
    source = int(turn_queue.get("MessageRetentionPeriod", SQS_DEFAULT_RETENTION_SECONDS))
    dead = int(properties(template, "TurnDeadLetterQueue")["MessageRetentionPeriod"])
    assert dead > source


def event_source_mappings(template: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {
        logical_id: properties(template, logical_id)
        for logical_id, resource in template["Resources"].items()
        if resource["Type"] == "AWS::Lambda::EventSourceMapping"
    }


def test_agent_consumes_turn_queue_with_partial_batch_failures(template: dict[str, Any]) -> None:
    # An explicit mapping: SAM's SQS event would attach a managed policy that can receive from
    # and delete in every queue of the account.
    events = properties(template, "AgentTurnFunction").get("Events", {})
    assert [event for event in events.values() if event["Type"] == "SQS"] == []
    (mapping,) = event_source_mappings(template).values()
    assert mapping["EventSourceArn"] == {"Fn::GetAtt": ["TurnQueue", "Arn"]}
    assert "ReportBatchItemFailures" in mapping.get("FunctionResponseTypes", [])
    assert mapping.get("BatchSize") == 1
    assert make_context(template).queue_mapping("AgentTurnFunction") == QueueMapping(
        "TurnQueue", 1, 4
    )


def test_snapstart_is_off_by_default_and_then_the_queue_invokes_the_alias(
    template: dict[str, Any],
) -> None:
    assert template["Parameters"]["EnableSnapStart"]["Default"] == "false"
    agent = properties(template, "AgentTurnFunction")
    # A version per deployment, even when only a layer (the package's code) changed.
    assert agent["AutoPublishAlias"] == "live"
    assert agent["AutoPublishAliasAllProperties"] is True
    (mapping,) = event_source_mappings(template).values()
    for enabled, apply_on, invoked in (
        ("false", "None", "nanobot-AgentTurnFunction-X"),
        ("true", "PublishedVersions", "nanobot-AgentTurnFunction-X:live"),
    ):
        context = make_context(template, EnableSnapStart=enabled)
        assert context.evaluate(agent["SnapStart"]) == {"ApplyOn": apply_on}
        # Snapshots exist for published versions only: with SnapStart, the alias is invoked.
        assert context.evaluate(mapping["FunctionName"]) == invoked
        assert context.queue_mapping("AgentTurnFunction") == QueueMapping("TurnQueue", 1, 4)


def test_concurrency_parameters_keep_the_webhook_answering_and_deploy_anywhere(
    template: dict[str, Any],
) -> None:
    """Issue 41, Concurrency with intent: the turns (and with them their sandbox runs) are
    capped by the queue's event source, so a burst cannot take the webhook's executions; the
    reservations are 0 (none) by default, since Lambda refuses one that leaves an account fewer
    than 100 unreserved executions (a new account has 10 in all)."""
    parameters = template["Parameters"]
    assert parameters["WebhookReservedConcurrency"]["Default"] == 0
    assert parameters["SandboxReservedConcurrency"]["Default"] == 0
    turns = parameters["AgentTurnMaxConcurrency"]
    assert turns["MinValue"] == 2  # what Lambda accepts for MaximumConcurrency
    # In a new account (10 executions): the turns and one sandbox run each leave the webhook some.
    assert 2 * int(turns["Default"]) < 10
    webhook, sandbox = "WebhookFunction", "SandboxFunction"
    default = make_context(template)
    for logical_id in (webhook, sandbox):
        spec = default.evaluate(properties(template, logical_id))
        assert spec.get("ReservedConcurrentExecutions", "") == "", logical_id  # NoValue: unset
    reserved = make_context(
        template, WebhookReservedConcurrency="20", SandboxReservedConcurrency="5"
    )
    assert reserved.evaluate(properties(template, webhook))["ReservedConcurrentExecutions"] == "20"
    assert reserved.evaluate(properties(template, sandbox))["ReservedConcurrentExecutions"] == "5"
    (mapping,) = event_source_mappings(template).values()
    assert make_context(template, AgentTurnMaxConcurrency="50").evaluate(
        mapping["ScalingConfig"]
    ) == {"MaximumConcurrency": "50"}
    assert make_context(template, AgentTurnMaxConcurrency="50").queue_mapping(
        "AgentTurnFunction"
    ) == QueueMapping("TurnQueue", 1, 50)


def test_every_function_logs_to_a_log_group_with_a_retention(template: dict[str, Any]) -> None:
    """Issue 41, Bounded growth: no log group keeps its logs forever. Each function writes to a
    group the template makes, named as Lambda names it, kept LogRetentionDays."""
    assert template["Parameters"]["LogRetentionDays"]["Default"] == 30
    context = make_context(template, LogRetentionDays="7")
    resources = template["Resources"]
    functions = context.resources("AWS::Serverless::Function")
    assert set(functions) >= {"WebhookFunction", "AgentTurnFunction", "SchedulerFunction"}
    for logical_id, function in functions.items():
        group_id = function["Properties"]["LoggingConfig"]["LogGroup"]["Ref"]
        group = resources[group_id]
        assert group["Type"] == "AWS::Logs::LogGroup", logical_id
        assert group.get("Condition") == function.get("Condition"), logical_id
        name = context.evaluate(function["Properties"]["FunctionName"])
        assert context.evaluate(group["Properties"]) == {
            "LogGroupName": f"/aws/lambda/{name}",
            "RetentionInDays": "7",
        }, logical_id
    groups = context.resources("AWS::Logs::LogGroup")
    assert len(groups) == len(functions)  # no other group, none without a retention


def test_only_the_turn_queue_may_be_consumed(template: dict[str, Any]) -> None:
    consuming = [
        statement
        for statement in iam_statements(template["Resources"])
        if "sqs:ReceiveMessage" in as_list(statement["Action"])
        and statement["Resource"] != {"Fn::GetAtt": ["TurnDeadLetterQueue", "Arn"]}
    ]
    assert consuming == [
        {
            "Sid": "ConsumeTurnQueue",
            "Effect": "Allow",
            "Action": list(CONSUME_ACTIONS),
            "Resource": {"Fn::GetAtt": ["TurnQueue", "Arn"]},
        }
    ]
    assert consuming[0] in list(iam_statements(properties(template, "AgentTurnFunction")))


def test_only_the_agent_gets_the_llm_layer(template: dict[str, Any]) -> None:
    llm, core = {"Ref": "LlmLayer"}, {"Ref": "CoreLayer"}
    assert llm not in function_layers(template, "WebhookFunction")
    assert llm not in function_layers(template, "SchedulerFunction")
    assert core in function_layers(template, "WebhookFunction")
    agent_layers = function_layers(template, "AgentTurnFunction")
    assert core in agent_layers
    assert llm in agent_layers


def test_no_statement_allows_every_action_on_every_resource(template: dict[str, Any]) -> None:
    statements = list(iam_statements(template["Resources"]))
    assert len(statements) >= 5  # the walk found the template's policies
    for statement in statements:
        actions = as_list(statement.get("Action", []))
        resources = as_list(statement.get("Resource", []))
        assert not ("*" in actions and "*" in resources), statement
        assert "*" not in actions or statement["Effect"] == "Deny", statement
    for logical_id in template["Resources"]:
        if template["Resources"][logical_id]["Type"] != "AWS::Serverless::Function":
            continue
        for policy in as_list(properties(template, logical_id).get("Policies", [])):
            if isinstance(policy, str):  # an AWS managed policy by name or ARN
                assert policy.rsplit("/", 1)[-1] not in {"AdministratorAccess", "PowerUserAccess"}


def test_workspace_bucket_is_private_versioned_encrypted_and_tls_only(
    template: dict[str, Any],
) -> None:
    bucket = properties(template, "WorkspaceBucket")
    block = bucket["PublicAccessBlockConfiguration"]
    flags = ("BlockPublicAcls", "BlockPublicPolicy", "IgnorePublicAcls", "RestrictPublicBuckets")
    assert all(block.get(flag) is True for flag in flags), block
    assert bucket["VersioningConfiguration"]["Status"] == "Enabled"
    rules = bucket["BucketEncryption"]["ServerSideEncryptionConfiguration"]
    assert {rule["ServerSideEncryptionByDefault"]["SSEAlgorithm"] for rule in rules} <= {
        "AES256",
        "aws:kms",
    }

    policy = properties(template, "WorkspaceBucketPolicy")
    assert policy["Bucket"] == {"Ref": "WorkspaceBucket"}
    context = make_context(template)
    bucket_arn = ATTRIBUTES[("WorkspaceBucket", "Arn")]
    tls_denials = [
        context.evaluate(statement)
        for statement in as_list(policy["PolicyDocument"]["Statement"])
        if statement["Effect"] == "Deny"
        and statement.get("Condition", {}).get("Bool", {}).get("aws:SecureTransport")
        in ("false", False)
    ]
    assert tls_denials, "no statement denies requests without TLS"
    (denial,) = tls_denials
    assert denial["Principal"] in ("*", {"AWS": "*"})
    assert set(as_list(denial["Action"])) & {"s3:*", "*"}
    assert {bucket_arn, f"{bucket_arn}/*"} <= set(as_list(denial["Resource"]))


def test_heartbeat_schedule_invokes_the_scheduler_function(template: dict[str, Any]) -> None:
    context = make_context(template)
    schedule = context.evaluate(properties(template, "HeartbeatSchedule"))
    target = schedule["Target"]
    assert target["Arn"] == ATTRIBUTES[("SchedulerFunction", "Arn")]
    assert json.loads(target["Input"])["kind"] == "heartbeat"
    assert target["RoleArn"] == ATTRIBUTES[("SchedulerInvokeRole", "Arn")]
    assert schedule["GroupName"] == REFS["ScheduleGroup"]
    assert schedule["ScheduleExpression"].startswith(("rate(", "cron("))

    role = context.evaluate(properties(template, "SchedulerInvokeRole"))
    (trust,) = role["AssumeRolePolicyDocument"]["Statement"]
    assert trust["Principal"] == {"Service": "scheduler.amazonaws.com"}
    assert trust["Condition"]["StringEquals"]["aws:SourceAccount"] == ACCOUNT
    allowed = [s for s in iam_statements(role["Policies"]) if s["Effect"] == "Allow"]
    assert allowed
    for statement in allowed:
        assert as_list(statement["Action"]) == ["lambda:InvokeFunction"]
        assert as_list(statement["Resource"]) == [ATTRIBUTES[("SchedulerFunction", "Arn")]]


def test_keep_warm_is_off_by_default_and_then_pings_the_version_the_queue_invokes(
    template: dict[str, Any],
) -> None:
    assert template["Parameters"]["KeepWarmMinutes"]["Default"] == 0
    for logical_id in ("KeepWarmSchedule", "KeepWarmInvokeRole"):
        assert template["Resources"][logical_id]["Condition"] == "KeepWarmEnabled"
    assert make_context(template).condition("KeepWarmEnabled") is False
    (mapping,) = event_source_mappings(template).values()
    for minutes, snapstart, expression in (
        ("5", "false", "rate(5 minutes)"),
        ("1", "false", "rate(1 minute)"),  # Scheduler wants the singular for 1
        ("5", "true", "rate(5 minutes)"),
    ):
        context = make_context(template, KeepWarmMinutes=minutes, EnableSnapStart=snapstart)
        assert context.condition("KeepWarmEnabled") is True
        schedule = context.evaluate(properties(template, "KeepWarmSchedule"))
        assert schedule["ScheduleExpression"] == expression
        target = schedule["Target"]
        # The container kept warm is the one a turn finds: the queue's function or alias.
        invoked = context.evaluate(mapping["FunctionName"])
        assert target["Arn"].removeprefix(f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:") == (
            invoked
        )
        # The ping is exactly what the handler takes for one, nothing a turn could carry.
        assert json.loads(target["Input"]) == KEEP_WARM_EVENT
        assert target["RetryPolicy"]["MaximumRetryAttempts"] == 0
        # Not in ScheduleGroup, where agent_turn's role may change the cron tool's schedules.
        assert "GroupName" not in schedule
        assert target["RoleArn"] == ATTRIBUTES[("KeepWarmInvokeRole", "Arn")]
        role = context.evaluate(properties(template, "KeepWarmInvokeRole"))
        (trust,) = role["AssumeRolePolicyDocument"]["Statement"]
        assert trust["Principal"] == {"Service": "scheduler.amazonaws.com"}
        assert trust["Condition"]["StringEquals"]["aws:SourceAccount"] == ACCOUNT
        allowed = [s for s in iam_statements(role["Policies"]) if s["Effect"] == "Allow"]
        assert [as_list(statement["Action"]) for statement in allowed] == [
            ["lambda:InvokeFunction"]
        ]
        assert [as_list(statement["Resource"]) for statement in allowed] == [[target["Arn"]]]


@pytest.mark.parametrize(("logical_id", "settings_class"), FUNCTION_SETTINGS)
def test_function_environment_has_every_required_setting(
    template: dict[str, Any], logical_id: str, settings_class: type
) -> None:
    environment = make_context(template).function_environment(logical_id)
    required = [
        field.alias
        for field in settings_class.model_fields.values()
        if field.is_required() and field.alias
    ]
    assert required
    missing = [
        alias
        for alias in required
        if not any(environment.get(alias + suffix) for suffix in ("", "_PARAM", "_SECRET_ARN"))
    ]
    assert not missing, f"{logical_id} lacks {missing} (settings: {settings_class.__name__})"


@pytest.mark.parametrize(("logical_id", "settings_class"), FUNCTION_SETTINGS)
def test_settings_load_from_the_template_environment(
    template: dict[str, Any], logical_id: str, settings_class: Any
) -> None:
    # Types and patterns too: a queue URL without .fifo or a non-numeric limit fails here.
    environment = make_context(template).function_environment(logical_id)
    fetched: list[tuple[str, str]] = []

    def fetch(kind: str, reference: str) -> str:
        fetched.append((kind, reference))
        return "fetched-secret"

    settings_class.from_env(environment, fetch=fetch)
    # Secrets come from SSM parameter names (never a value in the template).
    assert all(kind == "param" and reference.startswith("/") for kind, reference in fetched)


def test_every_environment_variable_is_read_by_someone(template: dict[str, Any]) -> None:
    # Catches a misspelt or renamed variable that the required-settings check cannot see
    # (an optional setting under the wrong name just silently keeps its default).
    known = set(THIRD_PARTY_VARIABLES)
    for _, settings_class in FUNCTION_SETTINGS:
        for field in settings_class.model_fields.values():
            if field.alias:
                known |= {field.alias + suffix for suffix in ("", "_PARAM", "_SECRET_ARN")}
    context = make_context(template)
    for logical_id, _ in FUNCTION_SETTINGS:
        unknown = set(context.function_environment(logical_id)) - known
        assert not unknown, f"{logical_id}: nothing reads {sorted(unknown)}"


@pytest.mark.parametrize("transcription_key_parameter", ["", "/nanobot-lambda/whisper-key"])
@pytest.mark.parametrize("llm_api_key_parameter", ["", "/nanobot-lambda/llm-api-key"])
@pytest.mark.parametrize("logical_id", [logical_id for logical_id, _ in FUNCTION_SETTINGS])
def test_functions_may_read_exactly_the_ssm_parameters_they_reference(
    template: dict[str, Any],
    logical_id: str,
    llm_api_key_parameter: str,
    transcription_key_parameter: str,
) -> None:
    context = make_context(
        template,
        LlmApiKeyParameter=llm_api_key_parameter,
        TranscriptionApiKeyParameter=transcription_key_parameter,
    )
    environment = context.function_environment(logical_id)
    referenced = {
        f"arn:aws:ssm:{REGION}:{ACCOUNT}:parameter{value}"
        for name, value in environment.items()
        if name.endswith("_PARAM") and value
    }
    policies = context.evaluate(properties(template, logical_id).get("Policies", []))
    readable = {
        resource
        for statement in iam_statements(policies)
        if statement["Effect"] == "Allow" and "ssm:GetParameter" in as_list(statement["Action"])
        for resource in as_list(statement["Resource"])
    }
    assert readable == referenced


def test_webhook_route_matches_the_webhook_url_output(template: dict[str, Any]) -> None:
    events = properties(template, "WebhookFunction")["Events"]
    routes = [event["Properties"] for event in events.values() if event["Type"] == "HttpApi"]
    assert [(route["Method"], route["Path"]) for route in routes] == [
        ("POST", "/webhook"),
        ("POST", "/hooks/{name}"),  # the event hooks (functions/inbound_events.py)
    ]
    assert all(str(route.get("PayloadFormatVersion", "2.0")) == "2.0" for route in routes)
    url = template["Outputs"]["WebhookUrl"]["Value"]["Fn::Sub"]
    assert url.startswith("https://${ServerlessHttpApi}.execute-api.")
    assert url.endswith("/webhook")
    hooks_url = template["Outputs"]["HooksUrl"]["Value"]["Fn::Sub"]
    assert hooks_url == url.removesuffix("/webhook") + "/hooks"
    # /hooks shows each hook's URL under it.
    agent = properties(template, "AgentTurnFunction")["Environment"]["Variables"]
    assert agent["HOOKS_URL"] == {"Fn::Sub": hooks_url}


def test_env_example_sets_only_variables_the_template_declares(template: dict[str, Any]) -> None:
    # `sam local invoke --env-vars` silently ignores a variable the function does not declare.
    example = json.loads(ENV_EXAMPLE_PATH.read_text(encoding="utf-8"))
    context = make_context(template)
    for logical_id, variables in example.items():
        declared = context.function_environment(logical_id)
        assert set(variables) <= set(declared), (logical_id, set(variables) - set(declared))


def test_webhook_may_only_write_its_own_items_in_the_sessions_table(
    template: dict[str, Any],
) -> None:
    """The webhook raises /stop flags, records album parts and queued updates, reads and writes
    pairing, reads hooks and records their requests, records reactions and edits, reads the
    approvals a press is checked against; it must not
    read conversations, nor write into one: its sessions-table items are
    its own partitions."""
    context = make_context(template)
    policies = context.evaluate(properties(template, "WebhookFunction")["Policies"])
    # (resource, actions, the partition keys the statement is limited to)
    dynamodb = [
        (
            statement["Resource"],
            as_list(statement["Action"]),
            statement.get("Condition", {})
            .get("ForAllValues:StringLike", {})
            .get("dynamodb:LeadingKeys"),
        )
        for statement in iam_statements(policies)
        if any(str(action).startswith("dynamodb:") for action in as_list(statement["Action"]))
    ]
    sessions = ATTRIBUTES[("SessionsTable", "Arn")]
    idempotency = ATTRIBUTES[("IdempotencyTable", "Arn")]
    assert sorted(dynamodb, key=str) == sorted(
        [
            (sessions, ["dynamodb:PutItem"], ["stop#*"]),  # adapters/aws/stop_flags.py
            (sessions, ["dynamodb:UpdateItem"], ["album#*"]),  # adapters/aws/albums.py
            (  # adapters/aws/pairing.py: one partition
                sessions,
                ["dynamodb:GetItem", "dynamodb:UpdateItem", "dynamodb:PutItem"],
                ["pairing"],
            ),
            (sessions, ["dynamodb:GetItem"], ["hooks"]),  # adapters/aws/inbound_events.py: a hook
            (  # a hook's rate and the deliveries it queued
                sessions,
                ["dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem"],
                ["hook#*"],
            ),
            (sessions, ["dynamodb:GetItem"], ["approval#*"]),  # adapters/aws/approvals.py
            (sessions, ["dynamodb:PutItem"], ["feedback#*", "edit#*"]),  # adapters/aws/feedback
            (
                idempotency,
                [
                    "dynamodb:GetItem",
                    "dynamodb:PutItem",
                    "dynamodb:UpdateItem",
                    "dynamodb:DeleteItem",
                ],
                None,
            ),
        ],
        key=str,
    )


def test_the_console_reads_and_writes_only_chats_usage_hooks_and_pairing_in_sessions(
    template: dict[str, Any],
) -> None:
    """The console reads a chat's session header (its model choice, its recent turns), usage,
    hooks, their deliveries and pairing, and writes a chat's model choice, hooks and pairing:
    never the album, stop or feedback partitions, never a hook's request records (the
    webhook's), nor (being no turn) a conversation's messages beyond its header's
    preferences."""
    context = make_context(template)
    policies = context.evaluate(properties(template, "ConsoleFunction")["Policies"])
    sessions = ATTRIBUTES[("SessionsTable", "Arn")]
    limited = sorted(
        (
            as_list(statement["Action"]),
            statement["Condition"]["ForAllValues:StringLike"]["dynamodb:LeadingKeys"],
        )
        for statement in iam_statements(policies)
        if statement["Resource"] == sessions
    )
    assert limited == [
        (
            ["dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem"],
            ["telegram:*", "hooks", "pairing"],
        ),
        (
            ["dynamodb:Query", "dynamodb:GetItem"],
            ["telegram:*", "usage#*", "hooks", "hook#*", "pairing"],
        ),
    ]


def test_the_console_is_optional_and_serves_its_page_and_api(template: dict[str, Any]) -> None:
    console = template["Resources"]["ConsoleFunction"]
    assert console["Condition"] == "ConsoleEnabled"
    assert template["Outputs"]["ConsoleUrl"]["Condition"] == "ConsoleEnabled"
    assert make_context(template).condition("ConsoleEnabled")
    assert not make_context(template, EnableConsole="false").condition("ConsoleEnabled")
    routes = {
        (event["Properties"]["Method"], event["Properties"]["Path"])
        for event in console["Properties"]["Events"].values()
    }
    assert routes == {("GET", "/console"), ("POST", "/console/api/{route+}")}
    assert function_layers(template, "ConsoleFunction") == [{"Ref": "CoreLayer"}]


FUNCTIONS = [logical_id for logical_id, _ in FUNCTION_SETTINGS]
ALARM_TOPIC = REFS["AlarmTopic"]


def alarms(template: dict[str, Any], **parameters: str) -> dict[str, dict[str, Any]]:
    context = make_context(template, **parameters)
    return {
        logical_id: context.evaluate(spec["Properties"])
        for logical_id, spec in template["Resources"].items()
        if spec["Type"] == "AWS::CloudWatch::Alarm"
    }


def alarm_on(found: dict[str, dict[str, Any]], namespace: str, metric: str, **dims: str) -> Any:
    (alarm,) = [
        alarm
        for alarm in found.values()
        if (alarm.get("Namespace"), alarm.get("MetricName")) == (namespace, metric)
        and {d["Name"]: d["Value"] for d in alarm["Dimensions"]} == dims
    ]
    return alarm


def test_alarms_watch_the_dead_letter_queue_errors_and_turn_duration(
    template: dict[str, Any],
) -> None:
    found = alarms(template)
    dlq = alarm_on(
        found, "AWS/SQS", "ApproximateNumberOfMessagesVisible", QueueName="nanobot-Dlq-X.fifo"
    )
    assert (dlq["ComparisonOperator"], dlq["Threshold"]) == ("GreaterThanThreshold", 0)
    for logical_id in ("WebhookFunction", "SchedulerFunction"):
        errors = alarm_on(found, "AWS/Lambda", "Errors", FunctionName=REFS[logical_id])
        assert (errors["Statistic"], errors["Threshold"]) == ("Sum", 0)
    timeout = int(
        function_setting(template, "AgentTurnFunction", "Timeout", LAMBDA_DEFAULT_TIMEOUT)
    )
    duration = alarm_on(found, "AWS/Lambda", "Duration", FunctionName=REFS["AgentTurnFunction"])
    assert duration["Statistic"] == "Maximum"
    assert duration["Threshold"] == 0.8 * timeout * 1000  # near the timeout, in milliseconds
    # Quiet periods have no data points: that is not an alarm.
    assert {alarm["TreatMissingData"] for alarm in found.values()} == {"notBreaching"}


def test_the_agent_turn_alarm_also_sees_turns_failed_inside_a_batch(
    template: dict[str, Any],
) -> None:
    # A failed turn is a batch item failure, not a Lambda error: the alarm adds the function's
    # own Errors of the kinds that fail a turn, as adapters/aws/metrics.py emits them (namespace,
    # service).
    alarm = alarms(template, MetricsNamespace="bot")["AgentTurnErrorsAlarm"]
    (summed,) = [metric for metric in alarm["Metrics"] if metric["ReturnData"]]
    watched = {
        metric["Id"]: metric["MetricStat"]
        for metric in alarm["Metrics"]
        if not metric["ReturnData"]
    }
    assert summed["Expression"] == " + ".join(f"FILL({name}, 0)" for name in watched)
    series = {
        (
            stat["Metric"]["Namespace"],
            stat["Metric"]["MetricName"],
            tuple(sorted((d["Name"], d["Value"]) for d in stat["Metric"]["Dimensions"])),
        )
        for stat in watched.values()
    }
    retried_kinds = ("telegram_error", "turn_failed")  # the kinds SQS retries (core/telemetry.py)
    assert series == {
        ("AWS/Lambda", "Errors", (("FunctionName", REFS["AgentTurnFunction"]),)),
        *(("bot", "Errors", (("kind", kind), ("service", "nanobot"))) for kind in retried_kinds),
    }
    assert {stat["Stat"] for stat in watched.values()} == {"Sum"}
    assert (alarm["Threshold"], alarm["ComparisonOperator"]) == (0, "GreaterThanThreshold")
    service = template["Globals"]["Function"]["Environment"]["Variables"]["POWERTOOLS_SERVICE_NAME"]
    assert service == emf.DEFAULT_SERVICE == "nanobot"
    assert set(retried_kinds) <= set(get_args(telemetry.ErrorKind))


def test_alarm_email_is_optional(template: dict[str, Any]) -> None:
    resources = template["Resources"]
    sns = [name for name, spec in resources.items() if spec["Type"].startswith("AWS::SNS::")]
    assert sorted(sns) == ["AlarmEmailSubscription", "AlarmTopic"]
    assert {resources[name].get("Condition") for name in sns} == {"HasAlarmEmail"}
    assert not make_context(template).condition("HasAlarmEmail")
    assert make_context(template, AlarmEmail="ops@example.com").condition("HasAlarmEmail")

    subscription = make_context(template, AlarmEmail="ops@example.com").evaluate(
        properties(template, "AlarmEmailSubscription")
    )
    assert subscription == {
        "TopicArn": ALARM_TOPIC,
        "Protocol": "email",
        "Endpoint": "ops@example.com",
    }
    for alarm in alarms(template, AlarmEmail="ops@example.com").values():
        assert alarm["AlarmActions"] == [ALARM_TOPIC]
    for alarm in alarms(template).values():
        assert not alarm.get("AlarmActions")  # AWS::NoValue: no topic to notify


def test_dashboard_shows_the_functions_metrics(template: dict[str, Any]) -> None:
    context = make_context(template, MetricsNamespace="my-bot")
    context.pseudo["AWS::StackName"] = "nanobot"
    body = json.loads(context.evaluate(properties(template, "Dashboard"))["DashboardBody"])
    lines = [line for widget in body["widgets"] for line in widget["properties"]["metrics"]]
    ours = [line[1] for line in lines if line[0] == "my-bot"]  # the first line of each widget
    assert ours == ["Turns", "PromptTokens", "CostUSD", "TurnDuration"]
    named = {entry for line in lines for entry in line if isinstance(entry, str)}
    assert {"ModelCalls", "CompletionTokens", "CachedTokens", "nanobot-Dlq-X.fifo"} <= named
    options = [entry for line in lines for entry in line if isinstance(entry, dict)]
    expressions = [entry["expression"] for entry in options if "expression" in entry]
    assert expressions == ["SEARCH('{my-bot,kind,service} MetricName=\"Errors\"', 'Sum', 3600)"]
    environment = context.function_environment("AgentTurnFunction")
    assert environment["POWERTOOLS_METRICS_NAMESPACE"] == "my-bot"
    assert environment["POWERTOOLS_SERVICE_NAME"] == "nanobot"  # the dashboard's dimension


def test_every_function_is_traced(template: dict[str, Any]) -> None:
    for logical_id in FUNCTIONS:
        assert function_setting(template, logical_id, "Tracing", None) == "Active"


# -- least privilege: what each function may do, on what ----------------------------------------

BUCKET_ARN = ATTRIBUTES[("WorkspaceBucket", "Arn")]
WORKSPACE_OBJECTS = f"{BUCKET_ARN}/workspace/*"
SCOPE_OBJECTS = f"{BUCKET_ARN}/scopes/*"
RECALL_INDEXES = f"{BUCKET_ARN}/recall/*"
QUEUE_ARN = ATTRIBUTES[("TurnQueue", "Arn")]
DLQ_ARN = ATTRIBUTES[("TurnDeadLetterQueue", "Arn")]
SESSIONS_ARN = ATTRIBUTES[("SessionsTable", "Arn")]
JOBS_ARN = ATTRIBUTES[("JobsTable", "Arn")]
IDEMPOTENCY_ARN = ATTRIBUTES[("IdempotencyTable", "Arn")]
ITEM_ACTIONS = {
    f"dynamodb:{action}" for action in ("Query", "GetItem", "PutItem", "UpdateItem", "DeleteItem")
}

# The boto3 calls each function's code makes (grep the package for them), as IAM actions on
# the resources they touch. SSM, Scheduler and iam:PassRole have their own tests above.
EXPECTED_DATA_ACCESS = {
    "WebhookFunction": {
        (QUEUE_ARN, "sqs:SendMessage"),  # jobs.TurnQueue.enqueue
        (SESSIONS_ARN, "dynamodb:PutItem"),  # stop_flags.DynamoStopFlags.request
        (SESSIONS_ARN, "dynamodb:UpdateItem"),  # albums.DynamoAlbumBook.add_part
        (SESSIONS_ARN, "dynamodb:GetItem"),  # pairing.DynamoPairingStore (partition pairing)
        # idempotency.UpdateLedger (Powertools Idempotency's DynamoDB persistence)
        *(
            (IDEMPOTENCY_ARN, f"dynamodb:{action}")
            for action in ("GetItem", "PutItem", "UpdateItem", "DeleteItem")
        ),
    },
    "AgentTurnFunction": {
        (WORKSPACE_OBJECTS, "s3:GetObject"),  # workspace.S3Workspace.read
        (WORKSPACE_OBJECTS, "s3:PutObject"),  # .write (conditional)
        (SCOPE_OBJECTS, "s3:GetObject"),  # the same, in a person's or a group's scope
        (SCOPE_OBJECTS, "s3:PutObject"),
        (RECALL_INDEXES, "s3:GetObject"),  # recall_index.S3RecallIndexObjects.get
        (RECALL_INDEXES, "s3:PutObject"),  # .put (conditional)
        (BUCKET_ARN, "s3:ListBucket"),  # .refresh, .list_dir, .list_files
        # /memory versions and restore (memory_versions.VersionedFiles): .versions, .read_version
        (WORKSPACE_OBJECTS, "s3:GetObjectVersion"),
        (SCOPE_OBJECTS, "s3:GetObjectVersion"),
        (BUCKET_ARN, "s3:ListBucketVersions"),
        (QUEUE_ARN, "sqs:SendMessage"),  # spawn, announcements, continuations
        (QUEUE_ARN, "sqs:ChangeMessageVisibility"),  # records: a failed turn's retry delay
        # AgentTurnQueueMapping: the event source mapping polls with the function's role.
        (QUEUE_ARN, "sqs:ReceiveMessage"),
        (QUEUE_ARN, "sqs:DeleteMessage"),
        (QUEUE_ARN, "sqs:GetQueueAttributes"),
        # sessions: query, transact_write_items (Put, Update, Delete), update_item; journal:
        # get/put/update/delete_item; stop flags: get_item, delete_item. jobs:
        # put/get/query/update/delete, never scan (the CLI's).
        *((SESSIONS_ARN, action) for action in ITEM_ACTIONS),
        (SESSIONS_ARN, "dynamodb:BatchGetItem"),  # usage.DynamoUsageStore.overall_summary
        *((JOBS_ARN, action) for action in ITEM_ACTIONS),
    },
    "ConsoleFunction": {
        # workspace.S3Workspace of any scope: read, write (conditional), versions, restore
        (WORKSPACE_OBJECTS, "s3:GetObject"),
        (WORKSPACE_OBJECTS, "s3:GetObjectVersion"),
        (WORKSPACE_OBJECTS, "s3:PutObject"),
        (SCOPE_OBJECTS, "s3:GetObject"),
        (SCOPE_OBJECTS, "s3:GetObjectVersion"),
        (SCOPE_OBJECTS, "s3:PutObject"),
        (BUCKET_ARN, "s3:ListBucket"),
        (BUCKET_ARN, "s3:ListBucketVersions"),
        # sessions (a chat's header), usage, hooks, pairing: by partition (the next test)
        *(
            (SESSIONS_ARN, f"dynamodb:{action}")
            for action in ("Query", "GetItem", "PutItem", "UpdateItem", "DeleteItem")
        ),
        # jobs.DynamoJobStore: for_chat, get, set_paused, delete, the heartbeat's pause (read,
        # set), what agent_turn checks skills against (read); never put or scan
        *(
            (JOBS_ARN, f"dynamodb:{action}")
            for action in ("Query", "GetItem", "UpdateItem", "DeleteItem")
        ),
        # dead_letters.DeadLetterQueue: peek (receive, release), replay (send back, delete)
        (DLQ_ARN, "sqs:ReceiveMessage"),
        (DLQ_ARN, "sqs:ChangeMessageVisibility"),
        (DLQ_ARN, "sqs:DeleteMessage"),
        (QUEUE_ARN, "sqs:SendMessage"),
    },
    "SchedulerFunction": {
        (WORKSPACE_OBJECTS, "s3:GetObject"),  # HEARTBEAT.md
        (BUCKET_ARN, "s3:ListBucket"),  # so that a missing file is a 404, not a 403
        (QUEUE_ARN, "sqs:SendMessage"),
        (JOBS_ARN, "dynamodb:GetItem"),  # JobStore.get, latest_private_chat, heartbeat_paused
        (JOBS_ARN, "dynamodb:UpdateItem"),  # claim_firing, release_firing, record_run
        (JOBS_ARN, "dynamodb:DeleteItem"),  # a one-time job after it fired
        (SESSIONS_ARN, "dynamodb:GetItem"),  # an approval at its deadline (approval#* only)
    },
}
DATA_SERVICES = ("s3:", "sqs:", "dynamodb:")


def allowed_pairs(
    template: dict[str, Any], logical_id: str, **parameters: str
) -> set[tuple[str, str]]:
    """(resource, action) allowed to the function, with the key parameters and `parameters`."""
    context = make_context(
        template, LlmApiKeyParameter="/k", TranscriptionApiKeyParameter="/t", **parameters
    )
    policies = context.evaluate(properties(template, logical_id).get("Policies", []))
    return {
        (resource, action)
        for statement in iam_statements(policies)
        if statement["Effect"] == "Allow"
        for action in as_list(statement["Action"])
        for resource in as_list(statement["Resource"])
    }


@pytest.mark.parametrize("logical_id", sorted(EXPECTED_DATA_ACCESS))
def test_each_function_may_do_exactly_what_its_code_does_on_data(
    template: dict[str, Any], logical_id: str
) -> None:
    data = {
        pair for pair in allowed_pairs(template, logical_id) if pair[1].startswith(DATA_SERVICES)
    }
    assert data == EXPECTED_DATA_ACCESS[logical_id]


@pytest.mark.parametrize("logical_id", [logical_id for logical_id, _ in FUNCTION_SETTINGS])
def test_function_policies_are_explicit_statements_without_wildcards(
    template: dict[str, Any], logical_id: str
) -> None:
    policies = as_list(properties(template, logical_id).get("Policies", []))
    for policy in policies:
        # No SAM policy templates (DynamoDBCrudPolicy, S3ReadPolicy, …) or managed policies:
        # they grant more than the code uses. A policy is statements, possibly behind Fn::If.
        assert isinstance(policy, dict) and set(policy) <= {"Statement", "Fn::If"}, policy
    pairs = allowed_pairs(template, logical_id)
    assert pairs
    for resource, action in pairs:
        assert "*" not in action, (logical_id, action)  # no s3:*, dynamodb:*, …
        assert resource not in ("*", "arn:aws:s3:::*"), (logical_id, action, resource)
        # A wildcard only ever ends a resource scoped to this stack's own bucket or schedules.
        if "*" in resource:
            assert resource in (
                WORKSPACE_OBJECTS,
                SCOPE_OBJECTS,
                RECALL_INDEXES,
            ) or resource.endswith(f":schedule/{REFS['ScheduleGroup']}/*"), (logical_id, resource)


def test_tables_and_queues_are_encrypted_at_rest(template: dict[str, Any]) -> None:
    resources = template["Resources"]
    tables = [name for name, spec in resources.items() if spec["Type"] == "AWS::DynamoDB::Table"]
    queues = [name for name, spec in resources.items() if spec["Type"] == "AWS::SQS::Queue"]
    assert {"SessionsTable", "JobsTable"} <= set(tables)
    assert {"TurnQueue", "TurnDeadLetterQueue"} <= set(queues)
    for name in tables:
        assert properties(template, name)["SSESpecification"]["SSEEnabled"] is True, name
    for name in queues:
        queue = properties(template, name)
        assert queue.get("SqsManagedSseEnabled") is True or "KmsMasterKeyId" in queue, name


def test_with_mcp_servers_agent_turn_may_read_only_their_header_secrets(
    template: dict[str, Any],
) -> None:
    without = allowed_pairs(template, "AgentTurnFunction")
    servers = '[{"name": "x", "url": "https://x.example/mcp"}]'
    added = allowed_pairs(template, "AgentTurnFunction", McpServers=servers) - without
    assert added == {
        (f"arn:aws:ssm:{REGION}:{ACCOUNT}:parameter/nanobot/mcp/*", "ssm:GetParameter"),
        (
            f"arn:aws:secretsmanager:{REGION}:{ACCOUNT}:secret:nanobot/mcp/*",
            "secretsmanager:GetSecretValue",
        ),
    }


def test_the_sandbox_may_only_write_its_own_logs_and_holds_no_secret(
    template: dict[str, Any],
) -> None:
    context = make_context(template)
    sandbox = template["Resources"]["SandboxFunction"]
    assert sandbox["Condition"] == "SandboxEnabled"
    spec = context.evaluate(sandbox["Properties"])
    assert spec["Layers"] == [REFS["CoreLayer"]] and "Policies" not in spec  # its own role
    assert spec["Role"] == ATTRIBUTES[("SandboxRole", "Arn")]
    role = context.evaluate(template["Resources"]["SandboxRole"]["Properties"])
    assert "ManagedPolicyArns" not in role
    statements = [
        statement
        for policy in role["Policies"]
        for statement in policy["PolicyDocument"]["Statement"]
    ]
    assert statements == [
        {
            "Sid": "WriteOwnLogs",
            "Effect": "Allow",
            "Action": ["logs:CreateLogStream", "logs:PutLogEvents"],
            "Resource": ATTRIBUTES[("SandboxLogGroup", "Arn")],
        }
    ]
    # Its environment is the Globals' (no secrets, no tables, no bucket): nothing of its own.
    assert "Environment" not in spec
    shared = template["Globals"]["Function"]["Environment"]["Variables"]
    assert set(shared) == {
        "POWERTOOLS_SERVICE_NAME",
        "POWERTOOLS_LOG_LEVEL",
        "POWERTOOLS_METRICS_NAMESPACE",
        "TIMEZONE",
    }


def test_agent_turn_may_invoke_the_sandbox_and_nothing_else_of_lambda(
    template: dict[str, Any],
) -> None:
    invoking = {
        pair
        for pair in allowed_pairs(template, "AgentTurnFunction")
        if pair[1].startswith("lambda:")
    }
    assert invoking == {(ATTRIBUTES[("SandboxFunction", "Arn")], "lambda:InvokeFunction")}
    environment = make_context(template).function_environment("AgentTurnFunction")
    assert environment["SANDBOX_FUNCTION"] == REFS["SandboxFunction"]
    off = make_context(template, EnableSandbox="false")
    assert not off.condition("SandboxEnabled")
    assert off.function_environment("AgentTurnFunction")["SANDBOX_FUNCTION"] == ""
    policies = off.evaluate(properties(template, "AgentTurnFunction")["Policies"])
    assert not [s for s in iam_statements(policies) if "lambda:" in str(s.get("Action"))]


BEDROCK_MODEL = "arn:aws:bedrock:us-east-1::foundation-model/anthropic.claude-sonnet-4-5-v1:0"
BEDROCK_PROFILE = (
    f"arn:aws:bedrock:us-east-1:{ACCOUNT}:inference-profile/us.anthropic.claude-sonnet-4-5-v1:0"
)
BEDROCK_INVOKE = {"bedrock:InvokeModel", "bedrock:InvokeModelWithResponseStream"}


def test_bedrock_models_may_be_invoked_by_agent_turn_only_and_only_those_named(
    template: dict[str, Any],
) -> None:
    """BedrockModelArns (issue 27): empty grants nothing; set, agent_turn's role may invoke
    exactly those models and inference profiles, and no other role anything of Bedrock."""
    without = allowed_pairs(template, "AgentTurnFunction")
    assert not [pair for pair in without if pair[1].startswith("bedrock:")]
    assert not make_context(template).condition("HasBedrockModels")

    arns = f"{BEDROCK_MODEL}, {BEDROCK_PROFILE}"
    granted = allowed_pairs(template, "AgentTurnFunction", BedrockModelArns=arns)
    assert granted - without == {
        (arn, action) for arn in (BEDROCK_MODEL, BEDROCK_PROFILE) for action in BEDROCK_INVOKE
    }
    # Every other function and role, in either branch of any condition: no Bedrock at all.
    for logical_id, resource in template["Resources"].items():
        if logical_id == "AgentTurnFunction":
            continue
        assert "bedrock" not in json.dumps(resource).lower(), logical_id
