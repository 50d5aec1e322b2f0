"""The chaos soak of issue 25, its small seeded slice (the large one is `make soak`).

Four chats of three messages, through the whole local stack with agent_turn in a worker process
that the plan kills at journal boundaries, a model that answers a re-run differently, model
errors, Telegram faults, duplicate posts and redelivered jobs (tests/soak/). One run serves
both tests: that the harness did strike (crashes, worker deaths and restarts), and the
product's promise, every message answered exactly once and saved as shown.
"""

from __future__ import annotations

import fcntl
import pickle

import pytest

from tests.soak.checker import Figures
from tests.soak.harness import SoakRun, run_soak
from tests.soak.plan import SoakPlan

# A crash rate above `make soak`'s, so that four chats see several (seed 12: five).
SLICE = SoakPlan(seed=12, chats=4, messages=3, crash_rate=0.7)


@pytest.fixture(scope="module")
def soak(moto_endpoint: str, tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> SoakRun:
    """One run for both tests. Under pytest-xdist's work stealing the two may fall to two
    processes: the first to come runs the slice, the other waits for it and reads its run."""

    def run() -> SoakRun:
        # Retries at once (`make soak` keeps the deployed pauses): what a retry does, sooner.
        return run_soak(
            SLICE,
            log_dir=tmp_path_factory.mktemp("soak"),
            moto_endpoint=moto_endpoint,
            retries_wait=False,
        )

    if worker_id == "master":  # no xdist
        return run()
    kept = tmp_path_factory.getbasetemp().parent / "chaos-soak-slice.pickle"  # the processes'
    with open(f"{kept}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if kept.exists():
            shared: SoakRun = pickle.loads(kept.read_bytes())  # noqa: S301 - this run's own file
            return shared
        made = run()
        kept.write_bytes(pickle.dumps(made))
        return made


def test_the_soak_kills_the_worker_where_its_plan_says_and_restarts_it(soak: SoakRun) -> None:
    crashes = [fault for fault in soak.injected if fault.what.startswith("crash")]
    assert soak.figures.crashes == len(crashes) > 0
    # Each crash killed a worker; the next invocation started a new one (its init again).
    assert len(soak.cold_starts) == len(crashes) + 1
    assert {fault.kind for fault in crashes} <= {"send", "draft", "dynamodb", "s3"}
    assert soak.model_failures > 0  # model errors and cut streams were served
    assert soak.figures.msgs == 12 and soak.figures.stuck == 0


def test_every_message_is_answered_exactly_once_and_saved_as_shown(soak: SoakRun) -> None:
    """Before the outbox knew messages by what they were, this slice lost two answers (a crash
    in a tool step, then a re-run that answered at once) and saved them unseen."""
    figures = soak.figures
    assert figures.passed, "\n".join([Figures.HEADER, figures.line(), *soak.verdict.failures])
    assert (figures.lost, figures.dup, figures.dlq) == (0, 0, 0)
