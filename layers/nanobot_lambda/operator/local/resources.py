"""Create the template's stateful resources on a moto endpoint, with the template's properties.

Buckets, tables, queues (with their FIFO, visibility and redrive settings), schedule groups and
schedules come from `infra/template.yaml` itself; names are `<prefix>-<logical id>`. What each
resource's Ref and GetAtt yield is recorded in the TemplateContext, so the functions' environment
can then be evaluated from the same template.
"""

from __future__ import annotations

import json
from typing import Any

import boto3

from nanobot_lambda.operator.local.cfn import TemplateContext, UnresolvedValue

ACCOUNT = "123456789012"


def create_resources(context: TemplateContext, prefix: str, region: str = "us-east-1") -> None:
    context.pseudo["AWS::Region"] = region
    _name_passive_resources(context, prefix, region)
    _create_buckets(context, prefix)
    _create_tables(context, prefix)
    _create_queues(context, prefix)
    _create_schedules(context, prefix)


def _local_name(prefix: str, logical_id: str) -> str:
    return f"{prefix}-{logical_id}".lower()


def _name_passive_resources(context: TemplateContext, prefix: str, region: str) -> None:
    """Functions, roles, layers and APIs are not created, but other resources refer to them."""
    for logical_id, spec in context.template["Resources"].items():
        name = _local_name(prefix, logical_id)
        kind = spec.get("Type", "")
        if kind == "AWS::Serverless::Function":
            arn = f"arn:aws:lambda:{region}:{ACCOUNT}:function:{name}"
        elif kind == "AWS::IAM::Role":
            arn = f"arn:aws:iam::{ACCOUNT}:role/{name}"
        else:
            arn = f"arn:aws:local:{region}:{ACCOUNT}:{name}"
        context.refs[logical_id] = name
        context.attributes[(logical_id, "Arn")] = arn
    context.refs.setdefault("ServerlessHttpApi", "local")


def _properties(context: TemplateContext, spec: dict[str, Any]) -> dict[str, Any]:
    properties: dict[str, Any] = context.evaluate(spec.get("Properties", {}))
    return properties


def _create_buckets(context: TemplateContext, prefix: str) -> None:
    s3 = boto3.client("s3")
    for logical_id, spec in context.resources("AWS::S3::Bucket").items():
        name = _local_name(prefix, logical_id)
        s3.create_bucket(Bucket=name)
        status = spec.get("Properties", {}).get("VersioningConfiguration", {}).get("Status")
        if status:
            s3.put_bucket_versioning(Bucket=name, VersioningConfiguration={"Status": status})
        context.refs[logical_id] = name
        context.attributes[(logical_id, "Arn")] = f"arn:aws:s3:::{name}"


def _create_tables(context: TemplateContext, prefix: str) -> None:
    dynamodb = boto3.client("dynamodb")
    for logical_id, spec in context.resources("AWS::DynamoDB::Table").items():
        name = _local_name(prefix, logical_id)
        properties = _properties(context, spec)
        arguments: dict[str, Any] = {
            "TableName": name,
            "KeySchema": properties["KeySchema"],
            "AttributeDefinitions": properties["AttributeDefinitions"],
            "BillingMode": properties.get("BillingMode", "PAY_PER_REQUEST"),
        }
        if properties.get("GlobalSecondaryIndexes"):
            arguments["GlobalSecondaryIndexes"] = properties["GlobalSecondaryIndexes"]
        description = dynamodb.create_table(**arguments)["TableDescription"]
        ttl = properties.get("TimeToLiveSpecification")
        if ttl and ttl.get("Enabled"):
            dynamodb.update_time_to_live(
                TableName=name,
                TimeToLiveSpecification={"Enabled": True, "AttributeName": ttl["AttributeName"]},
            )
        context.refs[logical_id] = name
        context.attributes[(logical_id, "Arn")] = description["TableArn"]


_QUEUE_ATTRIBUTES = (
    "FifoQueue",
    "ContentBasedDeduplication",
    "VisibilityTimeout",
    "MessageRetentionPeriod",
    "DelaySeconds",
    "ReceiveMessageWaitTimeSeconds",
    "DeduplicationScope",
    "FifoThroughputLimit",
)


def _create_queues(context: TemplateContext, prefix: str) -> None:
    """Queues without a redrive policy first: a redrive policy names its DLQ's ARN."""
    sqs = boto3.client("sqs")
    queues = context.resources("AWS::SQS::Queue")
    ordered = sorted(
        queues, key=lambda logical_id: "RedrivePolicy" in queues[logical_id].get("Properties", {})
    )
    for logical_id in ordered:
        properties = _properties(context, queues[logical_id])
        fifo = str(properties.get("FifoQueue", "false")).lower() == "true"
        name = _local_name(prefix, logical_id) + (".fifo" if fifo else "")
        attributes = {
            key: str(properties[key]).lower()
            if isinstance(properties[key], bool)
            else str(properties[key])
            for key in _QUEUE_ATTRIBUTES
            if key in properties
        }
        if "RedrivePolicy" in properties:
            attributes["RedrivePolicy"] = json.dumps(properties["RedrivePolicy"])
        # The attribute names are the template's own, from _QUEUE_ATTRIBUTES.
        url = sqs.create_queue(QueueName=name, Attributes=attributes)["QueueUrl"]  # type: ignore[arg-type]
        arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"][
            "QueueArn"
        ]
        context.refs[logical_id] = url
        context.attributes.update(
            {
                (logical_id, "Arn"): arn,
                (logical_id, "QueueName"): name,
                (logical_id, "QueueUrl"): url,
            }
        )


def _create_schedules(context: TemplateContext, prefix: str) -> None:
    """Schedule groups and schedules are stored in moto; moto never fires them."""
    scheduler = boto3.client("scheduler")
    for logical_id in context.resources("AWS::Scheduler::ScheduleGroup"):
        name = _local_name(prefix, logical_id)
        arn = scheduler.create_schedule_group(Name=name)["ScheduleGroupArn"]
        context.refs[logical_id] = name
        context.attributes[(logical_id, "Arn")] = arn
    for logical_id, spec in context.resources("AWS::Scheduler::Schedule").items():
        if "Condition" in spec and not context.condition(spec["Condition"]):
            continue  # e.g. KeepWarmSchedule with KeepWarmMinutes 0
        try:
            properties = _properties(context, spec)
        except UnresolvedValue:
            continue
        name = _local_name(prefix, logical_id)
        arguments: dict[str, Any] = {
            "Name": name,
            "ScheduleExpression": properties["ScheduleExpression"],
            "FlexibleTimeWindow": properties["FlexibleTimeWindow"],
            "Target": properties["Target"],
        }
        if properties.get("GroupName"):
            arguments["GroupName"] = properties["GroupName"]
        if properties.get("ScheduleExpressionTimezone"):
            arguments["ScheduleExpressionTimezone"] = properties["ScheduleExpressionTimezone"]
        scheduler.create_schedule(**arguments)
        context.refs[logical_id] = name
