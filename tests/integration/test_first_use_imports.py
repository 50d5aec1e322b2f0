"""What agent_turn's init imports ahead of the first completion (issue 31): only what that
completion would import for the configured model. The OpenAI SDK's resources (a third of a
second) only for the providers litellm reaches through that SDK; for others they would only
lengthen every cold start. In a fresh interpreter: this test process has imported them already."""

from __future__ import annotations

import json
import subprocess
import sys

PROBE = """
import json, sys
from nanobot_lambda.adapters.llm.litellm_model import import_first_use_modules
seen = {"litellm alone": "openai.resources" in sys.modules}
for model in sys.argv[1:]:
    import_first_use_modules(model)
    seen[model] = "openai.resources" in sys.modules
seen["httpcore"] = "httpcore" in sys.modules
print(json.dumps(seen))
"""
OTHER_PROVIDERS = [
    "anthropic/claude-sonnet-4-5",
    "bedrock/anthropic.claude-3-5-sonnet-20240620-v1:0",
    "gemini/gemini-2.5-flash",
    "hosted_vllm/qwen3",
]


def test_the_openai_sdk_is_imported_at_init_only_for_its_providers() -> None:
    models = [*OTHER_PROVIDERS, "gpt-4.1-mini"]  # a bare name is OpenAI's, and last
    completed = subprocess.run(  # noqa: S603 - this interpreter, a fixed probe
        [sys.executable, "-c", PROBE, *models], capture_output=True, text=True, check=True
    )
    seen = json.loads(completed.stdout.strip().splitlines()[-1])
    assert seen == {
        "litellm alone": False,  # litellm's own import leaves them to the first completion
        **dict.fromkeys(OTHER_PROVIDERS, False),
        "gpt-4.1-mini": True,
        "httpcore": True,  # for every model
    }
