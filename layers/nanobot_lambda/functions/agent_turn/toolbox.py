"""The model's tools in agent_turn, all listed here (`agent_tools`): the workspace tools (files,
web, and the sandbox's exec when there is one), which background tasks get too, and the chat
tools (cron, message, reply_buttons, send_file, spawn, and generate_image with IMAGE_MODEL),
which act for the turn's chat. Built once per container, so the tool list the model is offered
is byte-identical from turn to turn; each job's are these and the remote ones its chat may use
(`Toolbox.for_job`). And what the code sandbox has (`SandboxPrograms`), which skills'
`requires.bins` are checked against, and the record of it for the owner's console
(`RequirementsRecord`).

Adding a tool: its class in tools/ (its name, description, arguments, and `run(ctx, ...)` with
the job's context), one line in `agent_tools`, and its tests."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime

from nanobot_lambda.adapters.web.netguard import FetchLimits
from nanobot_lambda.core.errors import StorageError, ToolError
from nanobot_lambda.core.images import ImageGenerator
from nanobot_lambda.core.ports import JobStore, Schedules, TurnQueue
from nanobot_lambda.core.sandbox import Sandbox
from nanobot_lambda.core.skill_requirements import RequirementsSeen
from nanobot_lambda.core.skills import builtin_skill_files
from nanobot_lambda.core.tools import Tool, ToolRegistry
from nanobot_lambda.settings import AgentSettings
from nanobot_lambda.tools.chat import (
    CronTool,
    MessageTool,
    ReplyButtonsTool,
    SendFileTool,
    SpawnTool,
)
from nanobot_lambda.tools.context import JobContext
from nanobot_lambda.tools.files import file_tools
from nanobot_lambda.tools.images import GenerateImageTool
from nanobot_lambda.tools.remote import RemoteToolbox
from nanobot_lambda.tools.sandbox import ExecTool
from nanobot_lambda.tools.web import web_tools

logger = logging.getLogger(__name__)

# After the sandbox could not say which programs it has: seconds before it is asked again.
SANDBOX_ASK_AGAIN_SECONDS = 60

Tools = list[Tool[JobContext]]


@dataclass(frozen=True)
class ToolServices:
    """What the tools act through."""

    jobs: JobStore  # cron jobs, background tasks
    schedules: Schedules
    queue: TurnQueue  # background tasks' jobs
    images: ImageGenerator | None = None  # IMAGE_MODEL
    sandbox: Sandbox | None = None  # the code sandbox (SANDBOX_FUNCTION)


def agent_tools(
    settings: AgentSettings, services: ToolServices, clock: Callable[[], datetime]
) -> tuple[Tools, Tools]:
    """The agent's tools: (workspace tools, chat tools). The benchmarks count these schemas."""
    # The file tools also see the built-in skills' files, read-only, where the summary says.
    builtins = {path: text.encode() for path, text in builtin_skill_files().items()}
    workspace_tools = file_tools(builtins)
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
    if services.sandbox is not None:  # the code sandbox: background tasks may run code too
        workspace_tools.append(ExecTool(services.sandbox, settings.tool_result_max_chars))
    jobs = services.jobs
    chat_tools: Tools = [
        CronTool(jobs, services.schedules, timezone=settings.timezone, clock=clock),
        MessageTool(settings.allow_from, settings.owner),
        ReplyButtonsTool(),
        SendFileTool(),
        SpawnTool(
            services.queue,
            lambda chat_id: jobs.running_subagents(chat_id, now=int(time.time())),
            max_running=settings.max_subagents,
            on_spawn=lambda job: jobs.start_subagent(
                job.chat_id, job.subagent_id, now=int(time.time())
            ),
        ),
    ]
    if services.images is not None:  # IMAGE_MODEL: images for a chat (a background task has none)
        chat_tools.append(GenerateImageTool(services.images, settings.llm_timeout_seconds))
    return workspace_tools, chat_tools


class Toolbox:
    """The container's tools, and each job's: its kind's (every tool for a chat's turn, the
    workspace tools for a background task) and the remote servers' its chat may use."""

    def __init__(self, workspace_tools: Tools, chat_tools: Tools, remote: RemoteToolbox) -> None:
        self._workspace = ToolRegistry(workspace_tools)
        self._every = ToolRegistry([*workspace_tools, *chat_tools])
        self._remote = remote

    def for_job(self, chat_id: int, *, chat_tools: bool) -> ToolRegistry[JobContext]:
        """The tools of a job in `chat_id`; without `chat_tools`, those of a background task."""
        own = self._every if chat_tools else self._workspace
        return own.with_tools(self._remote.tools_for(chat_id))

    @property
    def every_tool(self) -> ToolRegistry[JobContext]:
        """A chat's turn's own tools, without any remote one."""
        return self._every


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
