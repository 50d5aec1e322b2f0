"""`doctor`: a pass/fail list of everything the bot needs, with the fix for each failure."""

from __future__ import annotations

import argparse
import os
from typing import Any

from nanobot_lambda.operator.cli.common import add_command, add_env_file_option, add_stack_option
from nanobot_lambda.operator.local.state import LocalStackInfo
from nanobot_lambda.operator.ops.doctor import Check, Doctor, summarize

MARKS = {"ok": "ok  ", "FAIL": "FAIL", "warn": "WARN", "skip": "skip"}


def register(commands: Any) -> None:
    doctor = add_command(
        commands,
        "doctor",
        help="check configuration, AWS, the stack, the model, the bot, the webhook, the workspace",
        description="Check, in order: the settings (the stack's parameters with --stack, else "
        "the environment and .env), AWS credentials, the stack and its outputs, the model (a "
        "real one-token completion), the MCP servers (each answers; who may use it), the bot "
        "token (getMe), the webhook (the stack's URL, no recent delivery error), and the "
        "workspace (default files present, skills parse). Prints each result with the fix for a "
        "failure or a warning; exits 1 if anything failed (a warning does not). With --local, "
        "the stack of the running `chat`: its resources on moto and its hooks' URL, the model "
        "and MCP servers of the environment, its workspace.",
        examples=[
            "nanobot-lambda doctor --stack nanobot-lambda",
            "nanobot-lambda doctor            (the local settings: .env)",
            "nanobot-lambda doctor --local    (the running `make chat`)",
        ],
        handler=doctor_command,
    )
    add_stack_option(doctor, local=True)
    add_env_file_option(doctor)


def _print(check: Check) -> None:
    print(f"{MARKS[check.status]}  {check.name:<16} {check.detail}", flush=True)
    if check.fix:
        print(f"      {'':<16} fix: {check.fix}", flush=True)


def doctor_command(arguments: argparse.Namespace) -> int:
    local = LocalStackInfo.find() if arguments.local else None  # none running: said, exit 2
    checks = []
    for check in Doctor(os.environ, arguments.stack, local).run():
        _print(check)
        checks.append(check)
    print(summarize(checks))
    return 1 if any(check.status == "FAIL" for check in checks) else 0
