"""Bedrock Runtime on 127.0.0.1 as far as its refusals: every request (Converse or
InvokeModel, SigV4 not checked) is answered 403 with the message Bedrock gives.

Bedrock refuses for two reasons with two fixes, and only its message tells them apart:
`NO_ACCESS` (the account has not enabled the model) and `NOT_AUTHORIZED` (the caller's IAM
identity may not invoke it).
"""

from __future__ import annotations

from typing import Any

from nanobot_lambda.operator.local.http import JsonHttpServer

NO_ACCESS = "You don't have access to the model with the specified model ID."
NOT_AUTHORIZED = (
    "User: arn:aws:sts::123456789012:assumed-role/nanobot-AgentTurnRole/x is not authorized "
    "to perform: bedrock:InvokeModel on resource: arn:aws:bedrock:us-east-1::foundation-model/"
    "anthropic.claude-sonnet-4-5-v1:0 because no identity-based policy allows the "
    "bedrock:InvokeModel action"
)


class BedrockRefusals(JsonHttpServer):
    def __init__(self, message: str) -> None:
        super().__init__()
        self.message = message
        self.paths: list[str] = []  # each request's path, e.g. /model/<id>/converse

    def answer(
        self, method: str, path: str, headers: dict[str, str], body: bytes
    ) -> tuple[int, Any]:
        self.paths.append(path)
        return 403, {"message": self.message}
