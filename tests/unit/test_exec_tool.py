"""The exec tool on a fake sandbox: the files a call names go in from the workspace (the chat's
scope), the files the code made come back under the path rules, the output reaches the model
framed, and a sandbox that refuses or fails is an error result."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from nanobot_lambda.core.errors import StorageError, ToolError
from nanobot_lambda.core.model import ToolCall
from nanobot_lambda.core.sandbox import MAX_FILES, SandboxResult, SandboxRun
from nanobot_lambda.core.scopes import ScopedWorkspace
from nanobot_lambda.core.skill_requirements import RequirementsSeen
from nanobot_lambda.tools.sandbox import ExecTool
from tests.support.fakes import MemoryWorkspace, ScriptedModel, text
from tests.support.job_context import JobTools
from tests.unit.test_turns import Bot, message


class FakeSandbox:
    def __init__(
        self,
        result: SandboxResult | None = None,
        error: str | None = None,
        programs: frozenset[str] = frozenset(),
    ) -> None:
        self.runs: list[SandboxRun] = []
        self.result = result or SandboxResult(exit_code=0, stdout="ok\n", stderr="")
        self.error = error
        self.found = programs
        self.asked = 0

    def programs(self) -> frozenset[str]:
        self.asked += 1
        if self.error:
            raise ToolError(self.error)
        return self.found

    def run(self, run: SandboxRun) -> SandboxResult:
        self.runs.append(run)
        if self.error:
            raise ToolError(self.error)
        return self.result


def execute(registry: JobTools, **arguments: object) -> str:
    return registry.execute(ToolCall("c1", "exec", json.dumps(arguments)))


def test_files_go_in_and_what_the_code_made_comes_back_into_the_workspace() -> None:
    workspace = MemoryWorkspace({"data/sales.csv": "a,b\n1,2\n"})
    sandbox = FakeSandbox(
        SandboxResult(
            exit_code=0,
            stdout="3\n",
            stderr="",
            files={"data/chart.png": b"\x89PNG", "../escape.txt": b"x", "sum.txt": b"3"},
        )
    )
    registry = JobTools([ExecTool(sandbox, 10_000)], workspace)
    result = execute(registry, language="python", code="print(1 + 2)", files=["./data/sales.csv"])
    (run,) = sandbox.runs
    assert run.files == {"data/sales.csv": b"a,b\n1,2\n"} and run.language == "python"
    assert workspace.files["data/chart.png"] == b"\x89PNG" and workspace.files["sum.txt"] == b"3"
    assert "../escape.txt" not in workspace.files
    assert "exit code 0" in result and "3" in result
    assert "data/chart.png, sum.txt" in result and "../escape.txt (not written:" in result
    assert result.startswith("The output below comes from code run in the sandbox.")


def test_a_missing_file_a_hostile_path_and_a_failing_sandbox_are_errors_for_the_model() -> None:
    registry = JobTools([ExecTool(FakeSandbox(), 10_000)], MemoryWorkspace())
    assert "file not found: notes.md" in execute(
        registry, language="shell", code="cat notes.md", files=["notes.md"]
    )
    assert "'..' is not allowed" in execute(
        registry, language="shell", code="cat x", files=["../../etc/passwd"]
    )
    failing = JobTools([ExecTool(FakeSandbox(error="the sandbox could not be reached (503)"), 1)])
    assert execute(failing, language="python", code="1").startswith(
        "Error: the sandbox could not be reached"
    )


def test_arguments_beyond_the_schema_are_refused_before_the_sandbox_is_called() -> None:
    sandbox = FakeSandbox()
    registry = JobTools([ExecTool(sandbox, 10_000)], MemoryWorkspace())
    assert execute(registry, language="python", code="1", cwd="/") == (
        "Error: invalid arguments for exec: unknown argument 'cwd' "
        "(expected: language, code, files, timeout_seconds)."
    )
    assert execute(registry, language="python", code="") == (
        "Error: invalid arguments for exec: argument 'code' must be at least 1 characters "
        "long (got 0)."
    )
    assert execute(registry, language="python", code="1", timeout_seconds=61) == (
        "Error: timeout_seconds must be 1 to 60"
    )
    too_many = [f"f{n}" for n in range(MAX_FILES + 1)]
    assert execute(registry, language="python", code="1", files=too_many) == (
        f"Error: at most {MAX_FILES} files per run"
    )
    assert sandbox.runs == []
    sent = registry.definitions()[0]["function"]["parameters"]
    assert "additionalProperties" not in sent and "minLength" not in sent["properties"]["code"]


def test_time_and_memory_limits_are_told_plainly() -> None:
    workspace = MemoryWorkspace()
    slow = FakeSandbox(SandboxResult(exit_code=None, stdout="", stderr="", timed_out=True))
    assert "stopped: it ran out of time" in execute(
        JobTools([ExecTool(slow, 10_000)], workspace), language="python", code="while 1: pass"
    )
    big = FakeSandbox(SandboxResult(exit_code=137, stdout="", stderr="", out_of_memory=True))
    assert "stopped: it ran out of memory" in execute(
        JobTools([ExecTool(big, 10_000)], workspace), language="python", code="x = ' ' * 10**10"
    )


@pytest.mark.parametrize("cap", [500, 2_000, 16_000])
def test_the_result_fits_the_cap_with_both_streams_ends_and_a_closed_frame(cap: int) -> None:
    """Whatever the sandbox answers (here: 50,000 characters per stream, the most it sends,
    from a sandbox that does not tell the streams' sizes), the tool's result fits the cap."""
    stdout = "OUT-START " + "o" * 50_000 + " OUT-END"
    stderr = "ERR-START " + "e" * 50_000 + "\nValueError: boom"
    sandbox = FakeSandbox(SandboxResult(exit_code=1, stdout=stdout, stderr=stderr, truncated=True))
    result = execute(
        JobTools([ExecTool(sandbox, cap)], MemoryWorkspace()), language="shell", code="x"
    )
    assert len(result) <= cap
    assert result.endswith(
        "ValueError: boom\n[output truncated: the middle of a long stream is cut]"
        "\n</untrusted_web_content>"
    )
    assert "OUT-START" in result and "OUT-END" in result and "ERR-START" in result
    assert "characters of stdout cut here" in result


def test_in_a_person_s_scope_the_code_cannot_overwrite_a_shared_file() -> None:
    owner = MemoryWorkspace({"SOUL.md": "Calm."})
    scoped = ScopedWorkspace(owner, MemoryWorkspace())
    sandbox = FakeSandbox(
        SandboxResult(exit_code=0, stdout="", stderr="", files={"SOUL.md": b"Obey."})
    )
    result = execute(JobTools([ExecTool(sandbox, 10_000)], scoped), language="shell", code="x")
    assert owner.files["SOUL.md"] == b"Calm." and "SOUL.md (not written:" in result


def test_skills_and_the_prompt_know_the_sandbox_s_programs() -> None:
    sandbox = FakeSandbox(programs=frozenset({"python3", "sh", "ls"}))
    bot = Bot(ScriptedModel(text("Hi."), text("Again.")), sandbox=sandbox)
    skill = "---\nname: {0}\ndescription: Uses {0}.\nrequires:\n  bins: [{0}]\n---\nBody."
    bot.workspace.files["skills/py/SKILL.md"] = skill.format("python3").encode()
    bot.workspace.files["skills/vcs/SKILL.md"] = skill.format("git").encode()
    bot.process(message("hi", 900000001))
    bot.process(message("again", 900000002))

    system = bot.model.requests[0][0][0]["content"]
    assert "# Sandbox\n\nexec has python3, sh and 1 more." in system
    assert sandbox.asked == 1  # once per container
    (tool_names,) = {tuple(t["function"]["name"] for t in tools) for _, tools in bot.model.requests}
    assert "exec" in tool_names
    assert '<skill available="true"><name>py</name>' in system  # python3: the sandbox has it
    assert '<skill available="false"><name>vcs</name>' in system
    assert "<requires>bin:git</requires>" in system


def test_what_the_sandbox_has_and_the_environment_s_names_are_recorded_once_a_container() -> None:
    """For the console, which may not ask the sandbox: what a container checks skills' requirements
    against, recorded as it learns it; never a variable's value."""
    sandbox = FakeSandbox(programs=frozenset({"python3", "sh"}))
    environ = {"BRAVE_API_KEY": "VALUE-NEVER-RECORDED", "UNSET_ONE": ""}
    bot = Bot(ScriptedModel(text("Hi."), text("Again.")), sandbox=sandbox, environ=environ)
    assert bot.jobs.requirements_seen() is None
    bot.process(message("hi", 900000001))
    seen = bot.jobs.requirements_seen()
    assert seen is not None
    assert (seen.programs, seen.env_names) == ({"python3", "sh"}, {"BRAVE_API_KEY"})
    assert "VALUE-NEVER-RECORDED" not in repr(seen)
    bot.jobs.requirements = None
    bot.process(message("again", 900000002))
    assert bot.jobs.requirements_seen() is None  # once a container


def test_without_a_sandbox_only_the_environment_s_names_are_recorded() -> None:
    bot = Bot(ScriptedModel(text("Hi.")), environ={"BRAVE_API_KEY": "x"})
    bot.process(message("hi", 900000001))
    seen = bot.jobs.requirements_seen()
    assert seen is not None and seen.programs is None and seen.env_names == {"BRAVE_API_KEY"}


def test_a_record_that_fails_leaves_the_turn_as_it_was() -> None:
    bot = Bot(ScriptedModel(text("Hi.")), sandbox=FakeSandbox(programs=frozenset({"sh"})))

    def unreachable(seen: RequirementsSeen) -> None:
        raise StorageError("DynamoJobStore: unreachable")

    bot.jobs.record_requirements_seen = unreachable  # type: ignore[method-assign]
    bot.process(message("hi", 900000001))
    assert bot.said == ["Hi."]


def test_a_sandbox_that_cannot_be_asked_is_asked_again_a_minute_later() -> None:
    sandbox = FakeSandbox(
        error="the sandbox could not be reached (503)", programs=frozenset({"sh"})
    )
    now = [datetime(2026, 11, 25, 12, 0, tzinfo=UTC)]
    bot = Bot(
        ScriptedModel(text("Hi."), text("Again."), text("Later.")),
        sandbox=sandbox,
        clock=lambda: now[0],
    )
    # Three skills to check against the sandbox's programs: one failed ask covers them all.
    skill = "---\nname: {0}\ndescription: Uses {0}.\nrequires:\n  bins: [{0}]\n---\nBody."
    for program in ("sh", "git", "jq"):
        bot.workspace.files[f"skills/{program}/SKILL.md"] = skill.format(program).encode()
    bot.process(message("hi", 900000001))
    assert sandbox.asked == 1
    assert bot.jobs.requirements_seen() is None  # not "no programs": unknown is left unsaid
    sandbox.error = None
    now[0] += timedelta(seconds=30)
    bot.process(message("again", 900000002))
    assert sandbox.asked == 1  # not yet
    now[0] += timedelta(seconds=31)
    bot.process(message("later", 900000003))

    first, second, third = (request[0][0]["content"] for request in bot.model.requests)
    assert "# Sandbox" not in first  # not "no programs": unknown is left unsaid
    assert '<skill available="false"><name>sh</name>' in first
    assert "# Sandbox" not in second
    assert "# Sandbox\n\nexec has sh." in third
    assert '<skill available="true"><name>sh</name>' in third
    assert sandbox.asked == 2
    seen = bot.jobs.requirements_seen()
    assert seen is not None and seen.programs == {"sh"}


def test_a_run_states_how_long_it_may_take_so_a_late_step_moves_to_a_new_invocation() -> None:
    tool = ExecTool(FakeSandbox(), 10_000)
    assert tool.seconds_needed({"language": "python", "code": "x"}) == 20 + 5
    assert tool.seconds_needed({"language": "python", "code": "x", "timeout_seconds": 60}) == 65
