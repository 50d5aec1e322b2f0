"""The scheduler function's logic: events from EventBridge Scheduler.

Today: the heartbeat. It reads `HEARTBEAT.md`; when the file holds no task (only headings,
comments and empty checkboxes) nothing else happens, so an idle heartbeat costs no model call.
Otherwise the tasks are queued as an agent turn whose report goes to `HEARTBEAT_CHAT_ID`.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from nanobot_lambda.jobs import HeartbeatJob, TurnQueue
from nanobot_lambda.workspace import NotText, Workspace

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


class SchedulerService:
    def __init__(
        self,
        *,
        workspace: Workspace,
        queue: TurnQueue,
        heartbeat_chat_id: int | None,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self._workspace = workspace
        self._queue = queue
        self._heartbeat_chat_id = heartbeat_chat_id
        self._clock = clock

    def handle(self, event: Mapping[str, Any]) -> dict[str, str]:
        kind = event.get("kind")
        if kind == "heartbeat":
            return self.heartbeat(event.get("scheduled_time"))
        logger.warning("scheduler event of unknown kind %r ignored", kind)
        return {"status": "ignored"}

    def heartbeat(self, scheduled_time: object = None) -> dict[str, str]:
        file = self._workspace.read(HEARTBEAT_FILE)
        try:
            tasks = heartbeat_tasks(file.text if file else None)
        except NotText:
            logger.warning("%s is not text; heartbeat skipped", HEARTBEAT_FILE)
            return {"status": "idle"}
        if tasks is None:
            logger.info("heartbeat: no tasks, no model call")
            return {"status": "idle"}
        if self._heartbeat_chat_id is None:
            logger.warning("heartbeat has tasks but HEARTBEAT_CHAT_ID is not set; skipped")
            return {"status": "no_target"}
        # Scheduler delivers at least once: the scheduled time makes a re-delivery a duplicate.
        fired_at = str(scheduled_time or self._clock().isoformat(timespec="minutes"))
        job = HeartbeatJob(chat_id=self._heartbeat_chat_id, tasks=tasks, fired_at=fired_at)
        self._queue.enqueue(job, group=HEARTBEAT_GROUP, dedup_id=_dedup_id(fired_at))
        logger.info("heartbeat: tasks queued")
        return {"status": "queued"}


def _dedup_id(fired_at: str) -> str:
    return "heartbeat-" + re.sub(r"[^A-Za-z0-9_-]", "-", fired_at)[:100]
