"""The webhook must never import litellm: a fresh interpreter imports the handler and handles an
update (enqueueing it on moto server), then inspects sys.modules."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import boto3

from nanobot_lambda.operator.local.cfn import TemplateContext
from tests.conftest import ROOT, telegram_update
from tests.integration.conftest import resources  # noqa: F401 - fixture

SCRIPT = textwrap.dedent(
    """
    import json, sys
    from pathlib import Path
    from nanobot_lambda.operator.local.runtime import LocalLambdaContext, load_handler_module
    from nanobot_lambda.operator.local.stack import http_event

    module = load_handler_module(Path("functions/webhook"), "webhook_app")
    event = http_event(sys.argv[1], secret="isolation-secret")
    response = module.handler(event, LocalLambdaContext("webhook", 10, 256))
    heavy_roots = ("litellm", "openai", "tiktoken", "aws_xray_sdk")
    heavy = sorted(name for name in sys.modules if name.split(".")[0] in heavy_roots)
    print(json.dumps({"status": response["statusCode"], "heavy": heavy}))
    """
)


def test_webhook_handles_an_update_without_importing_litellm(
    resources: TemplateContext,  # noqa: F811
) -> None:
    queue_url = resources.refs["TurnQueue"]
    env = {
        **os.environ,
        "TELEGRAM_SECRET_TOKEN": "isolation-secret",
        "ALLOW_FROM": "111111111",
        "TURN_QUEUE_URL": queue_url,
        "SESSIONS_TABLE": resources.refs["SessionsTable"],
        "IDEMPOTENCY_TABLE": resources.refs["IdempotencyTable"],
    }
    update = json.dumps(telegram_update("text_private"))
    completed = subprocess.run(  # noqa: S603
        [sys.executable, "-c", SCRIPT, update],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    result = json.loads(completed.stdout.strip().splitlines()[-1])
    assert result == {"status": 200, "heavy": []}
    queued = boto3.client("sqs").receive_message(QueueUrl=queue_url).get("Messages", [])
    assert len(queued) == 1  # it really handled the update
