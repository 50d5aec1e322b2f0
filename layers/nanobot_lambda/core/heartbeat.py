"""The heartbeat: standing tasks in HEARTBEAT.md, checked every 30 minutes.

The scheduler function only reads HEARTBEAT.md (`heartbeat_tasks`: no model, no cost when it
holds no task). When it does hold tasks, agent_turn first asks the model a small structured
question (`due_tasks`: a forced tool call, skip or run these tasks), and only runs a full agent
turn when the answer is "run".
"""

from __future__ import annotations

import logging
import re

from nanobot_lambda.core import texts
from nanobot_lambda.core.model import ChatModel, CompletionRequest, force_tool, function_tool

logger = logging.getLogger(__name__)

HEARTBEAT_FILE = "HEARTBEAT.md"
HEARTBEAT_GROUP = "heartbeat"
_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_EMPTY_ITEM = re.compile(r"^([-*+]|\d+[.)])(\s+\[[ xX]?\])?\s*$")
_DONE_ITEM = re.compile(r"^([-*+]|\d+[.)])\s+\[[xX]\]\s")


def heartbeat_tasks(text: str | None) -> str | None:
    """The actionable lines of HEARTBEAT.md, or None when there is nothing to do."""
    if not text:
        return None
    tasks = []
    for raw in _COMMENT.sub("", text).splitlines():
        line = raw.strip()
        if not line or line.startswith("#") or _EMPTY_ITEM.match(line) or _DONE_ITEM.match(line):
            continue
        tasks.append(line)
    return "\n".join(tasks) or None


HEARTBEAT_OK = "HEARTBEAT_OK"
DECISION = "heartbeat_decision"
DECISION_TOOL = function_tool(
    DECISION,
    "Decide whether standing tasks are due now.",
    {
        "type": "object",
        "properties": {
            "action": {"type": "string", "enum": ["skip", "run"]},
            "tasks": {"type": "string", "description": "The due tasks, when action is run."},
        },
        "required": ["action"],
    },
)


def due_tasks(model: ChatModel, tasks: str, runtime: str) -> str | None:
    """The tasks to run now, or None to skip, asked with `runtime`, the rendered runtime block.
    A malformed decision counts as a skip."""
    request = [
        {"role": "system", "content": texts.load("heartbeat_decision")},
        {"role": "user", "content": f"{runtime}\n\n{tasks}"},
    ]
    reply = model.complete(
        CompletionRequest(request, [DECISION_TOOL], tool_choice=force_tool(DECISION))
    )
    call = reply.call_to(DECISION)
    decision = (call.json_object() if call else None) or {}
    if decision.get("action") != "run":
        logger.info("heartbeat: nothing due")
        return None
    chosen = decision.get("tasks")
    return chosen.strip() if isinstance(chosen, str) and chosen.strip() else tasks


def nothing_to_report(reply: str) -> bool:
    return HEARTBEAT_OK in reply
