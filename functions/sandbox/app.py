"""Sandbox function: runs the code the model writes (Python or shell) and returns its result.

agent_turn invokes it synchronously with a request (see `nanobot_lambda.functions.sandbox`). Its
role can only write its own logs and its environment holds no secrets. Standard library only
(the runner comes from CoreLayer): no Powertools, no third-party import.
"""

import os
from pathlib import Path
from typing import Any

from nanobot_lambda.functions.sandbox import run


def handler(event: dict[str, Any], context: object) -> dict[str, Any]:
    in_lambda = "AWS_LAMBDA_FUNCTION_NAME" in os.environ
    root = os.environ.get("SANDBOX_ROOT") or ("/tmp" if in_lambda else "")  # noqa: S108
    if not root:  # outside Lambda, never empty the machine's own /tmp
        return {"ok": False, "error": "SANDBOX_ROOT must name the sandbox folder outside Lambda"}
    return run(event, root=Path(root), in_lambda=in_lambda)
