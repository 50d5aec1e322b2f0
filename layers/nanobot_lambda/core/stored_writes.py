"""A write one store prepares for another to make in the same transaction.

A turn's journal closing (`TurnJournal.finish`) and its usage counts (`UsageStore.updates`) are
saved by the transaction that saves its messages (`SessionStore.append(also=...)`). Opaque to
the core: it only passes them on. Its own module so that the stores' modules need not import
each other for it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

StoredWrite = Mapping[str, Any]
