"""Files out through the whole stack: the model asks for a workspace file to be sent, agent_turn
uploads it to the Bot API stand-in (multipart, as to Telegram) once, and tells the model; what
cannot be sent is the model's to hear."""

from __future__ import annotations

from nanobot_lambda.operator.local.stack import LocalStack
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
