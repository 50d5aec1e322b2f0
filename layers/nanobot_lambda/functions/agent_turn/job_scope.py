"""The job being run, and the chat scope its turn opens: the one piece of agent_turn's wiring
that changes from job to job.

A container runs one job at a time. `enter` points everything that depends on the job's subject
(core/subjects.py) at it, once, before the job's turn starts: the workspace at the subject's
scope (the owner's, a person's or a group's, core/scopes.py), the agent loops' remote tools
at those the subject's chat may use, and the model back at the default (a session's turn then
moves it to its chat's /model and /think choice, `use_model_of`). `open` is the turn's chat for
the chat tools (cron, message, spawn) while the turn runs: the subject's chat and topic, the
run's outbox.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from nanobot_lambda.core.model_choice import ModelSwitch
from nanobot_lambda.core.scopes import ScopeSwitch
from nanobot_lambda.core.sessions import ChatPreferences
from nanobot_lambda.core.subjects import Subject
from nanobot_lambda.core.tools import ToolRegistry
from nanobot_lambda.functions.agent_turn.turn_run import TurnRun
from nanobot_lambda.tools.chat import CurrentTurn, TurnOrigin, TurnScope
from nanobot_lambda.tools.remote import RemoteToolbox


class JobScope:
    def __init__(
        self,
        workspace: ScopeSwitch,
        remote: RemoteToolbox,
        registries: Sequence[ToolRegistry],
        current: CurrentTurn,
        models: ModelSwitch,
    ) -> None:
        self._workspace = workspace
        self._models = models
        self._remote = remote
        self._registries = registries
        self._current = current
        self._subject: Subject | None = None

    def enter(self, subject: Subject) -> None:
        """Work for the job's subject: in its scope, answering in its chat, with the tools of
        the remote servers that chat may use and no others."""
        self._subject = subject
        self._models.reset()  # the default model until a session's turn says its chat's choice
        self._workspace.enter(subject.scope)
        self._workspace.refresh()
        remote = self._remote.tools_for(subject.chat_id)
        for registry in self._registries:
            registry.offer(remote)

    def use_model_of(self, preferences: ChatPreferences) -> None:
        """The turn's session is known: its chat's /model and /think choice answers it."""
        self._models.use(preferences)

    @property
    def subject(self) -> Subject:
        """The subject of the job being run: its chat, topic, person and scope."""
        if self._subject is None:
            raise RuntimeError("no job is being run")
        return self._subject

    @contextmanager
    def open(self, run: TurnRun, origin: TurnOrigin, *, quiet: bool = False) -> Iterator[TurnScope]:
        """The run's chat, for the chat tools and the answer while it is open."""
        subject = self.subject
        self._current.scope = TurnScope(
            subject.chat_id,
            subject.thread_id,
            origin,
            run.outbox,
            quiet=quiet,
            turn_id=run.progress.turn_id,
        )
        try:
            yield self._current.scope
        finally:
            self._current.scope = None
