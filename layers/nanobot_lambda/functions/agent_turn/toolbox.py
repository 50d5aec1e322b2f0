"""The model's tools in agent_turn: the workspace tools (files and web), which background tasks
get too, and the chat tools (cron, message, spawn), which act for the turn's chat. Built once per
container, so the tool list the model is offered is byte-identical from turn to turn. And what
the code sandbox has (`SandboxPrograms`), which skills' `requires.bins` are checked against, and
the record of it for the owner's console (`RequirementsRecord`)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from datetime import datetime

from nanobot_lambda.adapters.web.netguard import FetchLimits
from nanobot_lambda.core.errors import StorageError, ToolError
from nanobot_lambda.core.ports import JobStore, Schedules, TurnQueue, Workspace
from nanobot_lambda.core.sandbox import Sandbox
from nanobot_lambda.core.skill_requirements import RequirementsSeen
from nanobot_lambda.core.skills import builtin_skill_files
from nanobot_lambda.core.tools import Tool
from nanobot_lambda.core.workspace import WithBuiltinFiles
from nanobot_lambda.settings import AgentSettings
from nanobot_lambda.tools.chat import (
    CronTool,
    CurrentTurn,
    MessageTool,
    ReplyButtonsTool,
    SendFileTool,
    SpawnTool,
)
from nanobot_lambda.tools.files import file_tools
from nanobot_lambda.tools.web import web_tools

logger = logging.getLogger(__name__)

# After the sandbox could not say which programs it has: seconds before it is asked again.
SANDBOX_ASK_AGAIN_SECONDS = 60


def agent_tools(
    settings: AgentSettings,
    current: CurrentTurn,
    workspace: Workspace,
    jobs: JobStore,
    schedules: Schedules,
    queue: TurnQueue,
    clock: Callable[[], datetime],
) -> tuple[list[Tool], list[Tool]]:
    """The agent's tools: (workspace tools, chat tools). The benchmarks count these schemas."""
    # The file tools also see the built-in skills' files, read-only, where the summary says.
    builtins = {path: text.encode() for path, text in builtin_skill_files().items()}
    workspace_tools = file_tools(WithBuiltinFiles(workspace, builtins))
    workspace_tools += web_tools(
        search_provider=settings.web_search_provider,
        search_api_key=(
            settings.web_search_api_key.get_secret_value() if settings.web_search_api_key else None
        ),
        search_api_base=settings.web_search_api_base,
        allow_networks=settings.web_fetch_allow_networks,
        limits=FetchLimits(settings.web_fetch_max_bytes, settings.web_fetch_timeout_seconds),
        result_max_chars=settings.tool_result_max_chars,
    )
    chat_tools: list[Tool] = [
        CronTool(current, jobs, schedules, timezone=settings.timezone, clock=clock),
        MessageTool(current, settings.allow_from, settings.owner),
        ReplyButtonsTool(current),
        SendFileTool(current, workspace),
        SpawnTool(
            current,
            queue,
            lambda chat_id: jobs.running_subagents(chat_id, now=int(time.time())),
            max_running=settings.max_subagents,
            on_spawn=lambda job: jobs.start_subagent(
                job.chat_id, job.subagent_id, now=int(time.time())
            ),
        ),
    ]
    return workspace_tools, chat_tools


class SandboxPrograms:
    """The programs the sandbox's runs find: asked once per container. If it could not be
    asked, not again for a minute: one prompt checks every skill's `requires.bins`, and a
    sandbox that is down must not be called for each."""

    def __init__(
        self,
        sandbox: Sandbox,
        clock: Callable[[], datetime],
        on_found: Callable[[frozenset[str]], None] = lambda found: None,
    ) -> None:
        self._sandbox = sandbox
        self._clock = clock
        self._on_found = on_found  # told once, what the sandbox said
        self._found: frozenset[str] | None = None
        self._retry_at = 0.0  # when to ask again after a failed ask (a timestamp)

    def __call__(self) -> frozenset[str]:
        if self._found is None:
            now = self._clock().timestamp()
            if now < self._retry_at:
                return frozenset()
            try:
                self._found = self._sandbox.programs()
            except ToolError as error:
                logger.warning("sandbox programs unknown: %s", error)
                self._retry_at = now + SANDBOX_ASK_AGAIN_SECONDS
                return frozenset()
            self._on_found(self._found)
        return self._found


class RequirementsRecord:
    """What this container checks skills' requirements against, recorded once for the owner's
    console (core/skill_requirements.py), which may neither ask the sandbox nor read this
    function's environment: the sandbox's programs as `SandboxPrograms` learns them (None without
    a sandbox) and the names of the environment's variables that are set, never a value. A
    record that fails is logged and the turn goes on; the next container records again."""

    def __init__(
        self, jobs: JobStore, environ: Mapping[str, str], clock: Callable[[], datetime]
    ) -> None:
        self._jobs = jobs
        self._environ = environ
        self._clock = clock
        self._recorded = False

    def __call__(self, programs: frozenset[str] | None) -> None:
        if self._recorded:
            return
        self._recorded = True
        names = frozenset(name for name, value in self._environ.items() if value)
        seen = RequirementsSeen(programs, names, self._clock().isoformat(timespec="seconds"))
        try:
            self._jobs.record_requirements_seen(seen)
        except StorageError as error:
            logger.warning("what skills are checked against was not recorded: %s", error)

    def without_sandbox(self) -> str:
        """The prompt's programs line without a sandbox (none), recording as the first prompt
        is built."""
        self(None)
        return ""
