"""A function's init phase: its imports, settings and clients, made once per container and kept
as long as it lives.

Python's cyclic garbage collector runs every few hundred allocations and, now and then, walks
every object the process holds. An init makes hundreds of thousands of objects (litellm's
import alone about 400,000) and none of them is garbage, so the collector only costs time
there: about a sixth of agent_turn's import (`bench/cold_import.py`). `begin()` turns it off for
the init; `end()` turns it on again and, in a Lambda container (the runtime's
`AWS_LAMBDA_RUNTIME_API` is set), first moves everything the init made to the collector's
permanent generation (`gc.freeze`), so a full collection during a turn no longer walks them
(about 0.1 s each on agent_turn's heap). The few thousand objects an init leaves as garbage
stay, once per container. In a process that lives past one init (tests, the local stack,
which load a function's module afresh for each stack) nothing is frozen, and an init that
raised half-way (a missing setting) must not leave it without a collector: whatever loads a
function's module there calls `ended()` once the module ran or failed.
"""

from __future__ import annotations

import gc
import os


def begin() -> None:
    """At the top of a function's module, before its imports."""
    gc.disable()


def end() -> None:
    """At the end of a function's module, once its clients and turn machinery are made."""
    if os.environ.get("AWS_LAMBDA_RUNTIME_API"):
        gc.freeze()
    gc.enable()


def ended() -> None:
    """After a function's module ran or raised, in a process that outlives the init: the
    collector on again (a failed init never reached `end()`)."""
    gc.enable()
