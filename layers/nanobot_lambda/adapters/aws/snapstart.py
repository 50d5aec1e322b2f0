"""SnapStart: what execution environments restored from one snapshot must not share.

With SnapStart (template parameter `EnableSnapStart`) Lambda runs agent_turn's init once, when a
version is published, and starts later execution environments from a snapshot of it. Whatever
the init made is then shared by every restored copy: the state of `random` (the same "random"
backoff jitter in every container), the connections in boto3's and the Telegram client's pools
(sockets of the snapshotted machine), and credentials cached at init time (perhaps expired).

After a restore, `after_restore` reseeds `random` from the OS, drops boto3's default session
(its credentials cache and endpoint data) and calls the handler's `rebuild`, which makes its
clients afresh. Settings (and the secrets read at init) are kept: rotating a secret takes a new
published version.

`snapshot_restore_py` exists only in Lambda's python3.12+ runtime: elsewhere `register` does
nothing, and without SnapStart the runtime never calls the hook.
"""

from __future__ import annotations

import importlib
import logging
import random
from collections.abc import Callable

import boto3

logger = logging.getLogger(__name__)


def after_restore(rebuild: Callable[[], None]) -> None:
    random.seed()  # from os.urandom: each restored copy draws its own numbers
    boto3.DEFAULT_SESSION = None  # the next client resolves credentials anew
    rebuild()
    logger.info("restored from a SnapStart snapshot: random reseeded, clients rebuilt")


def register(rebuild: Callable[[], None]) -> bool:
    """Run `after_restore(rebuild)` after every SnapStart restore; False outside Lambda."""
    try:
        hooks = importlib.import_module("snapshot_restore_py")
    except ImportError:
        return False
    hooks.register_after_restore(after_restore, rebuild)
    return True
