"""Lambda's `snapshot_restore_py` (only in the python3.12+ runtime), keeping registered hooks."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any


class RuntimeHooks(ModuleType):
    def __init__(self) -> None:
        super().__init__("snapshot_restore_py")
        self.after_restore: list[tuple[Callable[..., Any], tuple[Any, ...]]] = []

    def register_after_restore(self, hook: Callable[..., Any], *args: Any) -> None:
        self.after_restore.append((hook, args))

    def restore(self) -> None:
        """What Lambda does when it resumes an execution environment from the snapshot."""
        for hook, args in self.after_restore:
            hook(*args)
