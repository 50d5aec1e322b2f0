"""SnapStart: what execution environments restored from one snapshot must not share.

With SnapStart (template parameter `EnableSnapStart`) Lambda runs agent_turn's init once, when a
version is published, and starts later execution environments from a snapshot of it, taken
after the before-snapshot hooks ran. Whatever the init made is then shared by every restored
copy, possibly days later:
- the state of `random` (the same "random" backoff jitter in every container);
- connections: boto3's, the Telegram client's and litellm's pools hold sockets of the
  snapshotted machine;
- credentials cached at init time (perhaps expired by then), in boto3's default session;
- clocks read at init: any deadline, retry time or "last checked" held by an object made then;
- the container's turn state: the workspace's file cache and listing, the scope views, the
  sandbox's last answer, the prefetch of a cold start (which is not even started during a
  SnapStart init: `AWS_LAMBDA_INITIALIZATION_TYPE` is `snap-start` there).

So, before the snapshot, `before_snapshot` runs the handler's `close` (dropping connections it
holds) and collects garbage (the init's objects, which functions/init_phase.py froze, thawed for it
and frozen again), so that no socket of a client dropped during init (the one that read the
secrets) is in the snapshot. After every restore, `after_restore` reseeds `random` from
the OS, drops boto3's default session (its credentials and endpoint data) and calls the
handler's `rebuild`, which makes every object of the turn machinery afresh: clients, caches,
clocks. Settings (and the secrets read at init) are kept: rotating a secret takes a new
published version.

`snapshot_restore_py` exists only in Lambda's python3.12+ runtime: elsewhere `register` does
nothing, and without SnapStart the runtime never calls the hooks. The runtime runs
before-snapshot hooks in the reverse order of their registration and after-restore hooks in
their order (tests/support/runtime_hooks.py does the same).
"""

from __future__ import annotations

import gc
import importlib
import logging
import random
from collections.abc import Callable

import boto3

logger = logging.getLogger(__name__)


def before_snapshot(close: Callable[[], object]) -> None:
    close()
    # Clients dropped during init close their sockets now, not in a restored copy. The init
    # froze what it made (functions/init_phase.py), garbage included: thawed for this collection.
    gc.unfreeze()
    gc.collect()
    gc.freeze()


def after_restore(rebuild: Callable[[], None]) -> None:
    random.seed()  # from os.urandom: each restored copy draws its own numbers
    boto3.DEFAULT_SESSION = None  # the next client resolves credentials anew
    rebuild()
    logger.info("restored from a SnapStart snapshot: random reseeded, clients rebuilt")


def register(rebuild: Callable[[], None], close: Callable[[], object] = lambda: None) -> bool:
    """Run `before_snapshot(close)` before the snapshot and `after_restore(rebuild)` after
    every restore; False outside Lambda."""
    try:
        hooks = importlib.import_module("snapshot_restore_py")
    except ImportError:
        return False
    hooks.register_before_snapshot(before_snapshot, close)
    hooks.register_after_restore(after_restore, rebuild)
    return True
