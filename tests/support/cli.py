"""Running `nanobot-lambda`: in this process (`run_cli`), or as the installed console script
(`run_console_script`), as a user would from a shell.

A console script costs a fresh interpreter (litellm's import, a moto server, the stack's start:
about 15 s of CPU for `chat -m`); in this process the command costs what it does itself. So
the tests call `main(argv)` here, giving it what a process would start with: its environment
(the caller's without LLM_*/AWS_*, and what the test gives), its working directory, no boto3
session made before it (a session keeps the credentials it found), and stdout and stderr of
its own. What it changes of the process is put back afterwards: the environment (`--env-file`
sets variables), the working directory, and the loggers (the quiet `chat` replaces the
functions' log output). The console script is left to what only a process shows: the entry
point itself, exit codes at the OS level, signals and Ctrl-C, import-time behaviour.
"""

from __future__ import annotations

import _thread
import contextlib
import io
import logging
import os
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import boto3

from nanobot_lambda.operator.cli import main
from tests.conftest import ROOT
from tests.support.processes import sigint_default

CLI = shutil.which("nanobot-lambda") or str(Path(sys.executable).parent / "nanobot-lambda")
# What a shell sets for nanobot-lambda that the tests' process may hold (a developer's
# settings, the fixtures' moto server): each run gets only what its test gives.
CALLERS_OWN = ("LLM_", "AWS_")

Completed = subprocess.CompletedProcess[str]


def clean_environ() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(CALLERS_OWN)}


def run_console_script(*arguments: str, env: dict[str, str], cwd: Path = ROOT) -> Completed:
    """The installed console script in a process of its own, as a shell starts it."""
    return subprocess.run(  # noqa: S603
        [CLI, *arguments],
        cwd=cwd,
        env={**clean_environ(), **env},
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
        preexec_fn=sigint_default,  # as a shell starts it, whatever the suite inherited
    )


def run_cli(
    *arguments: str,
    env: dict[str, str],
    cwd: Path = ROOT,
    ctrl_c_after: Callable[[], None] | None = None,
) -> Completed:
    """`nanobot-lambda ARGUMENTS` in this process, as `run_console_script` would run it: the
    exit code main() returns (or argparse's), and what it wrote to stdout and stderr.

    `ctrl_c_after`: what the person does meanwhile (run in a thread), then Ctrl-C: SIGINT's
    KeyboardInterrupt in this (the main) thread, where a process started from a shell gets it.
    What it raised is raised here once the command has returned."""
    stdout, stderr = io.StringIO(), io.StringIO()
    with _as_a_process(env, cwd), contextlib.ExitStack() as interrupting:
        if ctrl_c_after is not None:
            interrupting.enter_context(_ctrl_c_after(ctrl_c_after))
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            try:
                code: Any = main(list(arguments))
            except SystemExit as exited:  # argparse: --help, or arguments it refuses
                code = exited.code
    returncode = code if isinstance(code, int) else (0 if code is None else 1)
    return subprocess.CompletedProcess(
        ["nanobot-lambda", *arguments], returncode, stdout.getvalue(), stderr.getvalue()
    )


@contextlib.contextmanager
def _as_a_process(env: dict[str, str], cwd: Path) -> Iterator[None]:
    environ = dict(os.environ)
    workdir = os.getcwd()
    session = boto3.DEFAULT_SESSION
    loggers = _LoggingState()
    try:
        os.environ.clear()
        os.environ.update({k: v for k, v in environ.items() if not k.startswith(CALLERS_OWN)})
        os.environ.update(env)
        os.chdir(cwd)
        boto3.DEFAULT_SESSION = None
        yield
    finally:
        os.environ.clear()
        os.environ.update(environ)
        os.chdir(workdir)
        boto3.DEFAULT_SESSION = session
        loggers.restore()


@contextlib.contextmanager
def _ctrl_c_after(person: Callable[[], None]) -> Iterator[None]:
    """Runs `person` beside the command, then sends SIGINT, which raises KeyboardInterrupt here
    (Python's own handler, as a shell leaves it to a process it starts)."""
    assert threading.current_thread() is threading.main_thread()
    failures: list[BaseException] = []
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)

    def act() -> None:
        try:
            person()
        except BaseException as failure:
            failures.append(failure)
        finally:
            _thread.interrupt_main(signal.SIGINT)

    acting = threading.Thread(target=act, name="person", daemon=True)
    acting.start()
    try:
        try:
            yield
        finally:
            acting.join()
    except KeyboardInterrupt:  # came after the command had returned (it had failed early)
        pass
    finally:
        signal.signal(signal.SIGINT, previous)
    if failures:
        raise failures[0]


# The attributes Powertools' Logger marks a logger it configured with (a Logger made later for
# the same service then adds no handler of its own).
_POWERTOOLS_MARKS = (
    "init",
    "powertools_handler",
    "powertools_buffer_config",
    "powertools_buffer_cache",
)


class _LoggingState:
    """The loggers' handlers, levels and filters, to put back after a command (the quiet `chat`
    empties the functions' loggers; a fresh process would have started with its own)."""

    def __init__(self) -> None:
        self._disable = logging.root.manager.disable
        self._loggers = {name: self._of(logger) for name, logger in self._all().items()}
        self._root_filters = {id(h): list(h.filters) for h in logging.root.handlers}

    @staticmethod
    def _all() -> dict[str, logging.Logger]:
        loggers = {
            name: logger
            for name, logger in logging.root.manager.loggerDict.items()
            if isinstance(logger, logging.Logger)
        }
        loggers[""] = logging.root
        return loggers

    @staticmethod
    def _of(logger: logging.Logger) -> dict[str, Any]:
        return {
            "handlers": list(logger.handlers),
            "level": logger.level,
            "propagate": logger.propagate,
            "disabled": logger.disabled,
            "marks": {m: getattr(logger, m) for m in _POWERTOOLS_MARKS if hasattr(logger, m)},
        }

    def restore(self) -> None:
        logging.disable(self._disable)
        for name, logger in self._all().items():
            state = self._loggers.get(name) or {
                "handlers": [],
                "level": logging.NOTSET,
                "propagate": True,
                "disabled": False,
                "marks": {},
            }
            logger.handlers = state["handlers"]
            logger.setLevel(state["level"])
            logger.propagate = state["propagate"]
            logger.disabled = state["disabled"]
            for mark in _POWERTOOLS_MARKS:
                if mark in state["marks"]:
                    setattr(logger, mark, state["marks"][mark])
                elif hasattr(logger, mark):
                    delattr(logger, mark)
        for handler in logging.root.handlers:
            if id(handler) in self._root_filters:
                handler.filters = self._root_filters[id(handler)]
