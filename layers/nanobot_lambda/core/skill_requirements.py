"""What skills' requirements are checked against where the turns run, as agent_turn saw it: for
the owner's console, which can neither ask the code sandbox (its role may invoke no function)
nor read agent_turn's environment (each function has its own).

A skill requires programs (`requires.bins`: checked against what the sandbox's runs find, asked
once per container: functions/agent_turn/toolbox.py, `SandboxPrograms`) and environment
variables (`requires.env`: agent_turn's own environment). Each agent_turn container records
what it checks them against once (`JobStore.record_requirements_seen`): the sandbox's programs
(None without a sandbox: agent_turn then checks its own PATH, which it does not list) and the
names of the variables set in its environment, never a value. The console judges each
requirement against the latest record: met, missing, or unknown (nothing recorded yet, or no
sandbox for a program).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RequirementsSeen:
    programs: frozenset[str] | None  # the sandbox's (None: no sandbox)
    env_names: frozenset[str]  # the variables set (not empty) in agent_turn's environment
    recorded_at: str  # ISO 8601, UTC


def requirement_met(requirement: str, seen: RequirementsSeen | None) -> bool | None:
    """Whether `requirement` (`bin:<program>` or `env:<variable>`, as a skill lists what it
    misses) is met where the turns run; None when that is not known."""
    kind, _, name = requirement.partition(":")
    if seen is None:
        return None
    if kind == "bin":
        return None if seen.programs is None else name in seen.programs
    if kind == "env":
        return name in seen.env_names
    return None
