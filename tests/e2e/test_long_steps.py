"""A step whose tool calls cannot all run in one invocation, end to end: "draw three variations"
through the local stack (moto server, the scripted model server's chat and image APIs, the Bot
API stand-in), with agent_turn's timeout from infra/template.yaml and with a shorter one. Each
image may take LLM_TIMEOUT_SECONDS (120 s) and 15 more to keep and send it: three do not fit one
invocation, so the images that fit are made, and the rest in the next invocation. Each image is
made and sent once, and the person gets the answer, not "this task took too long"."""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest

from nanobot_lambda.adapters.aws.sessions import DynamoSessionStore
from nanobot_lambda.core import texts
from nanobot_lambda.operator.local.runtime import LocalLambdaContext
from nanobot_lambda.operator.local.stack import LocalStack
from tests.conftest import StackFactory
from tests.support.scripted_model import ScriptedModelServer

IMAGE_SECONDS = 120  # what each image takes of the invocation


class ImagePacedContext(LocalLambdaContext):
    """An invocation whose clock is the image model too: each image made while it runs takes
    IMAGE_SECONDS of its time."""

    def __init__(self, model_server: ScriptedModelServer, timeout_seconds: float) -> None:
        super().__init__("agent_turn", timeout_seconds=timeout_seconds)
        self._server = model_server
        self._images_before = len(model_server.images)

    def get_remaining_time_in_millis(self) -> int:
        made = len(self._server.images) - self._images_before
        return max(0, super().get_remaining_time_in_millis() - IMAGE_SECONDS * 1000 * made)


@pytest.mark.parametrize(("timeout", "invocations"), [(None, 2), (180, 3)])
def test_draw_three_variations_makes_three_images_each_once_and_answers(
    stack_factory: StackFactory,
    model_server: ScriptedModelServer,
    timeout: float | None,
    invocations: int,
) -> None:
    """None: the template's timeout (300 s), two images in the first invocation and the third
    in the next; 180 s: one image per invocation."""
    stack = stack_factory(ImageModel=ScriptedModelServer.IMAGE_MODEL)
    seconds = timeout or stack.poller.context().timeout_seconds
    assert timeout or seconds == 300  # AgentTurnFunction's Timeout
    stack.poller.context = lambda: ImagePacedContext(model_server, seconds)
    model_server.call_tools(
        *[("generate_image", {"prompt": f"a red fox in snow, variation {n}"}) for n in (1, 2, 3)],
        content="Drawing three variations.",
    )
    model_server.reply("Here are your three variations.")
    update = stack.text_update("draw three variations of a red fox in snow")
    assert stack.post_update(update)["statusCode"] == 200
    stack.process_queue(max_seconds=120)

    prompts = [image_prompt(body) for _, body in model_server.images]
    assert sorted(prompts) == [f"a red fox in snow, variation {n}" for n in (1, 2, 3)]
    photos = stack.bot_api.files_sent
    assert [photo.method for photo in photos] == ["sendPhoto"] * 3
    assert len({photo.filename for photo in photos}) == 3
    assert [message.plain_text for message in stack.bot_api.messages] == [
        "Drawing three variations.",
        texts.load("still_working"),
        "Here are your three variations.",
    ]
    assert stack.poller.invocations == invocations and stack.poller.failures == 0
    assert len(model_server.requests) == 2  # the step was asked for once
    saved = session(stack)
    assert [m["role"] for m in saved] == ["user", "assistant", "tool", "tool", "tool", "assistant"]
    calls = [call["id"] for call in saved[1]["tool_calls"]]
    assert [m["tool_call_id"] for m in saved[2:5]] == calls  # answered in the calls' order
    assert all(m["content"].startswith("Made the image") for m in saved[2:5])


def image_prompt(body: bytes) -> str:
    prompt: str = json.loads(body)["prompt"]
    return prompt


def session(stack: LocalStack) -> list[dict[str, Any]]:
    store = DynamoSessionStore(stack.template.refs["SessionsTable"], boto3.client("dynamodb"))
    return store.load(f"telegram:{stack.user.id}", 200).messages
