"""Keep-warm: a scheduled no-op invocation that keeps one agent_turn container alive.

With the template parameter `KeepWarmMinutes` above 0, EventBridge Scheduler invokes
agent_turn every that many minutes with `KEEP_WARM_EVENT` (the template's `KeepWarmSchedule`
sends exactly this JSON). Lambda keeps an execution environment that was used recently, so the
first message after a quiet hour usually meets a container whose imports are done instead of
paying them (README "Cold starts").

The handler answers the ping before anything else and touches nothing: no S3, DynamoDB, queue
or model call, no log record, no metric. The init the first ping of a container runs also
imports what a first completion would (`import_first_use_modules`), so the container it keeps
is warm all through. It is told from a turn by its whole shape, never by a
field a queued message could carry: SQS invokes the function with `{"Records": [...]}`, so an
event with records is a batch of turns even if a record's body reads like the ping (such a
body is then a message that is not a job, and goes where those go).
"""

from __future__ import annotations

KEEP_WARM_EVENT = {"nanobot": "keep-warm"}


def is_keep_warm(event: object) -> bool:
    """Whether the invocation is the keep-warm ping: exactly `KEEP_WARM_EVENT`, nothing else."""
    return event == KEEP_WARM_EVENT
