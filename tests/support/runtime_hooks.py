"""Lambda's `snapshot_restore_py` (only in the python3.12+ runtime), keeping registered hooks,
and the runtime's two moments that run them.

The module's interface is the runtime's: `register_before_snapshot(func, *args, **kwargs)`,
`register_after_restore(...)`, `get_before_snapshot()`, `get_after_restore()`. The runtime
(awslambdaric's SnapStart helper) runs the before-snapshot hooks in the reverse order of their
registration, popping each, and the after-restore hooks in their order, each time it restores.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

Hook = tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]


class RuntimeHooks(ModuleType):
    def __init__(self) -> None:
        super().__init__("snapshot_restore_py")
        self.before_snapshot: list[Hook] = []
        self.after_restore: list[Hook] = []

    def register_before_snapshot(self, func: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
        self.before_snapshot.append((func, args, kwargs))

    def register_after_restore(self, func: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
        self.after_restore.append((func, args, kwargs))

    def get_before_snapshot(self) -> list[Hook]:
        return self.before_snapshot

    def get_after_restore(self) -> list[Hook]:
        return self.after_restore

    def snapshot(self) -> None:
        """What Lambda does once init has ended, before it takes the snapshot."""
        hooks = self.get_before_snapshot()
        while hooks:
            func, args, kwargs = hooks.pop()
            func(*args, **kwargs)

    def restore(self) -> None:
        """What Lambda does when it resumes an execution environment from the snapshot."""
        for func, args, kwargs in self.get_after_restore():
            func(*args, **kwargs)
