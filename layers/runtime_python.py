"""Find the Lambda runtime's Python (python3.12) on this machine, for checks of the built layers.

The layers are built for python3.12 whatever the building machine runs; importing them, or
compiling their bytecode, needs that very version. Looked up in order: `$RUNTIME_PYTHON`,
`python3.12` on PATH (a pyenv shim that refuses to run does not count), pyenv's versions.

    python layers/runtime_python.py      prints the interpreter found, or exits 1
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

RUNTIME_VERSION = (3, 12)
RUNTIME_NAME = "python{}.{}".format(*RUNTIME_VERSION)


def find_runtime_python() -> str | None:
    candidates = [os.environ.get("RUNTIME_PYTHON"), shutil.which(RUNTIME_NAME)]
    pyenv_root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))
    candidates += [
        str(path)
        for path in sorted(pyenv_root.glob(f"versions/{RUNTIME_NAME[6:]}*/bin/{RUNTIME_NAME}"))
    ]
    for candidate in candidates:
        if candidate and _is_runtime_version(candidate):
            return candidate
    return None


def _is_runtime_version(python: str) -> bool:
    try:
        completed = subprocess.run(  # noqa: S603
            [python, "-c", "import sys; print(sys.version_info[:2])"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except OSError:
        return False
    return completed.returncode == 0 and completed.stdout.strip() == str(RUNTIME_VERSION)


if __name__ == "__main__":
    found = find_runtime_python()
    if found is None:
        print(f"{RUNTIME_NAME} not found (set RUNTIME_PYTHON)", file=sys.stderr)
        sys.exit(1)
    print(found)
