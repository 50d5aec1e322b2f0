"""A complete environment for each function's settings, for tests that build them directly."""

from __future__ import annotations

QUEUE_URL = "https://sqs.us-east-1.amazonaws.com/123456789012/turns.fifo"

AGENT_ENV = {
    "TELEGRAM_BOT_TOKEN": "123:abc",
    "WORKSPACE_BUCKET": "bucket",
    "SESSIONS_TABLE": "sessions",
    "LLM_MODEL": "openai/gpt-4o-mini",
    "ALLOW_FROM": "111",
    "TURN_QUEUE_URL": QUEUE_URL,
    "JOBS_TABLE": "jobs",
    "SCHEDULE_GROUP": "group",
    "SCHEDULER_TARGET_ARN": "arn:aws:lambda:us-east-1:123456789012:function:scheduler",
    "SCHEDULER_ROLE_ARN": "arn:aws:iam::123456789012:role/invoke",
}
