"""Files out through the whole stack: the model asks for a workspace file to be sent, agent_turn
uploads it to the Bot API stand-in (multipart, as to Telegram) once, and tells the model; what
cannot be sent is the model's to hear."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import boto3

from nanobot_lambda.adapters.aws.usage import DynamoUsageStore
from nanobot_lambda.operator.local.stack import LocalStack
from tests.conftest import StackFactory
from tests.support.scripted_model import ScriptedModelServer

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 256


def say(stack: LocalStack, text: str, update_id: int) -> None:
    update = stack.text_update(text)
    update["update_id"] = update_id
    assert stack.post_update(update)["statusCode"] == 200
    stack.process_queue()


def test_a_workspace_image_reaches_the_chat_as_a_photo_once(
    stack: LocalStack, model_server: ScriptedModelServer
) -> None:
    stack.workspace.write("charts/sales.png", PNG)
    model_server.call_tool("send_file", {"path": "charts/sales.png", "caption": "Sales by month"})
    model_server.reply("Here is the chart of your sales.")
    say(stack, "send me the sales chart", 710000001)
    say(stack, "send me the sales chart", 710000001)  # Telegram delivers the update again

    (sent,) = stack.bot_api.files_sent
    assert (sent.method, sent.filename, sent.data) == ("sendPhoto", "sales.png", PNG)
    assert sent.chat_id == stack.user.id and sent.plain_caption == "Sales by month"
    told = model_server.requests[1]["messages"][-1]
    assert (
        told["role"] == "tool"
        and told["content"] == "Sent charts/sales.png to the chat as a photo."
    )
    assert [m.plain_text for m in stack.bot_api.messages] == ["Here is the chart of your sales."]


def test_a_file_that_is_not_an_image_goes_as_a_document_and_a_missing_one_is_an_error(
    stack: LocalStack, model_server: ScriptedModelServer
) -> None:
    stack.workspace.write("notes/report.md", b"# Report\nAll good.\n")
    model_server.call_tool("send_file", {"path": "notes/missing.md"})
    model_server.call_tool("send_file", {"path": "notes/report.md"})
    model_server.reply("Sent the report (the other file does not exist).")
    say(stack, "send both reports", 710000101)

    (sent,) = stack.bot_api.files_sent
    assert (sent.method, sent.filename) == ("sendDocument", "report.md")
    missing = model_server.requests[1]["messages"][-1]["content"]
    assert missing.startswith("Error: file not found: notes/missing.md")


def test_an_image_telegram_cannot_show_as_a_photo_goes_as_a_document(
    stack: LocalStack, model_server: ScriptedModelServer
) -> None:
    stack.workspace.write("scan.png", b"not really a png")  # the stand-in: IMAGE_PROCESS_FAILED
    model_server.call_tool("send_file", {"path": "scan.png"}).reply("Sent the scan.")
    say(stack, "send the scan", 710000201)

    (sent,) = stack.bot_api.files_sent
    assert (sent.method, sent.filename) == ("sendDocument", "scan.png")
    assert model_server.requests[1]["messages"][-1]["content"].endswith("as a document.")


def test_a_generated_image_reaches_the_chat_once_and_is_kept_and_counted(
    stack_factory: StackFactory, model_server: ScriptedModelServer
) -> None:
    """ImageModel set: generate_image is offered; the image model (the scripted server's image
    API, through litellm) makes the picture, it is kept under uploads/generated/, sent as a
    photo once though Telegram delivers the update again, and its price counts in /usage."""
    stack = stack_factory(ImageModel=ScriptedModelServer.IMAGE_MODEL, ImageSize="1024x1024")
    model_server.call_tool("generate_image", {"prompt": "a red fox in snow"})
    model_server.reply("Here is your fox.")
    say(stack, "draw me a fox", 710000301)
    say(stack, "draw me a fox", 710000301)

    (sent,) = stack.bot_api.files_sent
    assert sent.method == "sendPhoto" and sent.data == ScriptedModelServer.IMAGE
    assert len(model_server.images) == 1
    kept = [e.path for e in stack.workspace.list_files("uploads/generated")]
    assert len(kept) == 1 and kept[0].endswith(".png")
    assert [m.plain_text for m in stack.bot_api.messages] == ["Here is your fox."]
    offered = {tool["function"]["name"] for tool in model_server.requests[0]["tools"]}
    assert "generate_image" in offered
    table = stack.template.refs["SessionsTable"]
    usage = DynamoUsageStore(table, boto3.client("dynamodb"), timezone="UTC")
    spent = usage.summary(stack.user.id, datetime.now(UTC)).total.cost_usd
    assert spent > Decimal("0.01")  # the image's price (gpt-image-1, by its tokens)
