"""`cron list|remove`: the scheduled jobs (reminders and tasks made with the bot's cron tool)."""

from __future__ import annotations

import argparse
from datetime import UTC, datetime
from typing import Any

from nanobot_lambda.operator.cli.common import add_command, add_stack_option, deployment


def register(commands: Any) -> None:
    cron = add_command(
        commands,
        "cron",
        help="list or remove the scheduled jobs of a deployed stack",
        description="Scheduled jobs (reminders and tasks created with the bot's cron tool). "
        "The jobs table and schedule group come from --stack's outputs, or from JOBS_TABLE "
        "and SCHEDULE_GROUP.",
        examples=[
            "nanobot-lambda cron list --stack nanobot-lambda",
            "nanobot-lambda cron remove 1a2b3c4d --chat 111111111 --stack nanobot-lambda",
        ],
    )
    actions = cron.add_subparsers(dest="action", required=True, metavar="ACTION")
    cron_list = add_command(
        actions,
        "list",
        help="every job, with its next run",
        description="Every scheduled job (or one chat's), with its kind and next run "
        "(a quiet task, which reports only what is new or needs attention, shows `task quiet`).",
        examples=[
            "nanobot-lambda cron list --stack nanobot-lambda",
            "nanobot-lambda cron list --chat 111111111 --stack nanobot-lambda",
        ],
        handler=list_command,
    )
    cron_list.add_argument("--chat", type=int, help="only this chat's jobs")
    cron_remove = add_command(
        actions,
        "remove",
        help="delete a job and its schedule",
        description="Delete a job's schedule and its record (the id is in `cron list`).",
        examples=["nanobot-lambda cron remove 1a2b3c4d --chat 111111111 --stack nanobot-lambda"],
        handler=remove_command,
    )
    cron_remove.add_argument("job_id")
    cron_remove.add_argument("--chat", type=int, required=True, help="the chat that owns it")
    for sub in (cron_list, cron_remove):
        add_stack_option(sub, local=True)


def list_command(arguments: argparse.Namespace) -> int:
    from nanobot_lambda.adapters.aws.jobs import DynamoJobStore
    from nanobot_lambda.core.schedules import next_run

    target = deployment(arguments)
    table, _ = target.require("jobs_table", "schedule_group")
    store = DynamoJobStore(table, target.client("dynamodb"))
    jobs = store.for_chat(arguments.chat) if arguments.chat else store.all_jobs()
    if not jobs:
        print("No scheduled jobs.")
    now = datetime.now(UTC)
    for listed in jobs:
        anchor = datetime.fromisoformat(listed.starts_at or listed.created_at)
        upcoming = next_run((listed.expression, listed.timezone), now, anchor=anchor)
        when = upcoming.strftime("%Y-%m-%d %H:%M UTC") if upcoming else "-"
        kind = f"{listed.kind} quiet" if listed.quiet else listed.kind
        print(
            f"{listed.job_id}  chat {listed.chat_id}  {kind:<10} next {when}  "
            f"{listed.description}  {listed.name}"
        )
    return 0


def remove_command(arguments: argparse.Namespace) -> int:
    import sys

    from nanobot_lambda.adapters.aws.jobs import DynamoJobStore
    from nanobot_lambda.adapters.aws.schedules import EventBridgeSchedules

    target = deployment(arguments)
    table, group = target.require("jobs_table", "schedule_group")
    store = DynamoJobStore(table, target.client("dynamodb"))
    job = store.get(arguments.chat, arguments.job_id)
    if job is None:
        print(
            f"error: no job {arguments.job_id} in chat {arguments.chat} (see cron list)",
            file=sys.stderr,
        )
        return 1
    # Only deletion is needed: the target and role are not used to delete.
    scheduler = target.client("scheduler")
    EventBridgeSchedules(scheduler, group=group, target_arn="-", role_arn="-").delete(job)
    store.delete(job.chat_id, job.job_id)
    print(f"Removed {job.kind} '{job.name}' ({job.job_id}).")
    return 0
