"""Input tokens of the first request for "hello", and what recall adds.

Builds the request exactly as agent_turn does (system prompt from the workspace, tool schemas,
the user message with its runtime-context block) on a workspace in S3 (moto server), first the
default onboarded workspace, then with 20 extra skills. Counts with litellm's token counter
(gpt-4o's tokenizer, bundled with litellm; other providers' tokenizers differ by a few %).

    make bench            or            .venv/bin/python bench/tokens.py
"""

from __future__ import annotations

import os
from datetime import UTC, datetime
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import boto3
import litellm
from _moto import start_moto

from nanobot_lambda.adapters.aws.jobs import DynamoJobStore
from nanobot_lambda.adapters.aws.queue import SqsTurnQueue
from nanobot_lambda.adapters.aws.schedules import EventBridgeSchedules
from nanobot_lambda.adapters.aws.workspace import S3Workspace
from nanobot_lambda.core.context import ContextBuilder, RuntimeContext
from nanobot_lambda.core.memory import HISTORY_FILE
from nanobot_lambda.core.recall import HistoryRecall
from nanobot_lambda.core.tools import Tool, ToolRegistry
from nanobot_lambda.core.workspace import seed_workspace
from nanobot_lambda.functions.agent_turn.toolbox import ToolServices, agent_tools
from nanobot_lambda.settings import AgentSettings
from nanobot_lambda.tools.context import JobContext

MODEL = "gpt-4o"
NANOBOT_035_SYSTEM_PROMPT = 1900  # tokens, nanobot 0.3.5's default system prompt (issue 3)


def tokens(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None) -> int:
    return int(litellm.token_counter(model=MODEL, messages=messages, tools=tools))


def workspace(name: str, extra_skills: int) -> S3Workspace:
    s3 = boto3.client("s3")
    s3.create_bucket(Bucket=name)
    store = S3Workspace(name, s3)
    seed_workspace(store)
    for n in range(extra_skills):
        body = (
            f"---\nname: extra-{n:02d}\ndescription: Handles chores of kind {n} for the user "
            f"(example skill {n}).\n---\n# Extra {n}\nSteps…\n"
        )
        store.write(f"skills/extra-{n:02d}/SKILL.md", body.encode())
    store.refresh()
    return store


def agent_tool_set() -> list[Tool[JobContext]]:
    """The very tools agent_turn gives the model (only their schemas are used here)."""
    settings = AgentSettings.model_validate(
        {
            "TELEGRAM_BOT_TOKEN": "1:bench",
            "WORKSPACE_BUCKET": "bench",
            "SESSIONS_TABLE": "bench",
            "LLM_MODEL": MODEL,
            "ALLOW_FROM": "1",
            "TURN_QUEUE_URL": "https://sqs.us-east-1.amazonaws.com/1/bench.fifo",
            "JOBS_TABLE": "bench",
            "SCHEDULE_GROUP": "bench",
            "SCHEDULER_TARGET_ARN": "arn:aws:lambda:us-east-1:1:function:bench",
            "SCHEDULER_ROLE_ARN": "arn:aws:iam::1:role/bench",
        }
    )
    workspace_tools, chat_tools = agent_tools(
        settings,
        ToolServices(
            DynamoJobStore("bench", boto3.client("dynamodb")),
            EventBridgeSchedules(
                boto3.client("scheduler"), group="bench", target_arn="-", role_arn="-"
            ),
            SqsTurnQueue(settings.turn_queue_url, boto3.client("sqs")),
        ),
        lambda: datetime.now(UTC),
    )
    return [*workspace_tools, *chat_tools]


def first_request(store: S3Workspace, text: str = "hello") -> dict[str, int]:
    runtime = RuntimeContext(datetime.now(UTC), "UTC", "telegram", "111111111").render()
    messages = ContextBuilder({}).messages(store, [], text, runtime)
    tools = ToolRegistry(agent_tool_set()).definitions()
    system = tokens(messages[:1])
    total = tokens(messages, tools)
    schemas = total - tokens(messages)
    return {"system": system, "tools": schemas, "user": total - system - schemas, "total": total}


def recall_cost(store: S3Workspace) -> list[tuple[str, int, int]]:
    topics = ["garden", "taxes", "Lisbon trip", "dentist", "car repair", "birthday party"]
    entries = [
        f"[2026-{1 + n % 12:02d}-{1 + n % 28:02d} 10:00] Talked about the {topics[n % 6]} "
        f"(item {n}): decided on option {n % 3}, rejected option {(n + 1) % 3}."
        for n in range(300)
    ]
    store.write(HISTORY_FILE, ("# History\n\n" + "\n\n".join(entries) + "\n").encode())
    store.refresh()
    recall = HistoryRecall()
    rows = []
    for query in ("hello", "What did we decide about the Lisbon trip?", "how is the weather"):
        found = recall.search(store, query)
        block = "\n".join(found)
        rows.append(
            (query, len(found), tokens([{"role": "user", "content": block}]) if found else 0)
        )
    return rows


def main() -> None:
    server = start_moto()
    try:
        default = first_request(workspace("bench-default", 0))
        extra = first_request(workspace("bench-skills", 20))
        print(f'First request for "hello" ({MODEL} tokenizer)')
        print(f"{'workspace':<26} {'system':>7} {'tools':>6} {'user':>5} {'total':>6}  prefix")
        for name, row in (("default (onboarded)", default), ("default + 20 skills", extra)):
            prefix = (row["system"] + row["tools"]) / row["total"]
            print(
                f"{name:<26} {row['system']:>7} {row['tools']:>6} {row['user']:>5} "
                f"{row['total']:>6}  {prefix:.0%}"
            )
        print(f"(nanobot 0.3.5: about {NANOBOT_035_SYSTEM_PROMPT} system-prompt tokens alone)")
        print("\nRecall over 300 HISTORY entries (added to the runtime-context block)")
        for query, found, cost in recall_cost(workspace("bench-recall", 0)):
            print(f"  {query!r:<45} {found} entries, {cost:>4} tokens")
    finally:
        server.stop()


if __name__ == "__main__":
    main()
