"""The code sandbox, as the core sees it: a run (code, language, the files it needs) and its
result. The sandbox itself is a function of its own with no rights but its logs
(`functions/sandbox.py`, `functions/sandbox/`); agent_turn reaches it through this port
(`adapters/aws/sandbox.py`) and the `exec` tool (`tools/sandbox.py`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Protocol

Language = Literal["python", "shell"]
MAX_FILES = 20
MAX_FILE_BYTES = 5_000_000  # in and out, in total: a Lambda payload is at most 6 MB
MAX_TIMEOUT_SECONDS = 60


@dataclass(frozen=True)
class SandboxRun:
    language: Language
    code: str
    files: dict[str, bytes] = field(default_factory=dict)  # workspace-relative path -> bytes
    timeout_seconds: int = 20
    memory_mb: int = 512
    output_max_chars: int = 10_000


@dataclass(frozen=True)
class SandboxResult:
    exit_code: int | None
    stdout: str
    stderr: str
    timed_out: bool = False
    out_of_memory: bool = False
    truncated: bool = False
    stdout_bytes: int | None = None  # the whole streams' sizes (None: not told)
    stderr_bytes: int | None = None
    files: dict[str, bytes] = field(default_factory=dict)  # new or changed, by relative path
    skipped: tuple[str, ...] = ()  # produced but not returned (over the caps)
    duration_ms: int = 0


class Sandbox(Protocol):
    def run(self, run: SandboxRun) -> SandboxResult:
        """Run the code; raises ToolError (for the model) when the sandbox refused the run or
        could not be reached."""
        ...

    def programs(self) -> frozenset[str]:
        """The programs a run finds; raises ToolError when the sandbox cannot be asked."""
        ...


# Programs worth naming in the system prompt when the sandbox has them (it has many more).
NOTABLE_PROGRAMS = (
    "python3", "pip3", "sh", "bash", "awk", "sed", "grep", "find", "sort", "tar", "gzip",
    "zip", "unzip", "curl", "wget", "git", "jq", "sqlite3", "ffmpeg", "convert", "pandoc",
)  # fmt: skip


def describe_programs(programs: frozenset[str]) -> str:
    """The system prompt's line on the sandbox: the notable programs it has, and how many;
    empty while they are not known (the sandbox could not be asked yet)."""
    if not programs:
        return ""
    named = [name for name in NOTABLE_PROGRAMS if name in programs]
    others = len(programs) - len(named)
    listed = ", ".join(named) if named else "no notable programs"
    return f"exec has {listed}" + (f" and {others} more." if others > 0 else ".")
