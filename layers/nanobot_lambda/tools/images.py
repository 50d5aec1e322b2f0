"""`generate_image`: an image made by `IMAGE_MODEL`, kept in the scope's workspace and sent to
the chat as a photo (offered only when IMAGE_MODEL is set).

Sent once, also across a crash: the image is stored under a name made from the turn and the call
(`JobContext.call_key`, tools/context.py) before it is sent, with a conditional write. A later run
of the same step (the invocation died after the image was made) finds it there and sends that same
image: the provider is not paid twice, and the journaled outbox sees the same photo at the same
place and skips it if Telegram already has it. A different image at that place (had it been made
again) would be sent as a new message, never dropped.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from nanobot_lambda.core.errors import ChannelError, ModelError, ToolError
from nanobot_lambda.core.images import ImageGenerator, image_extension
from nanobot_lambda.core.outgoing import MAX_CAPTION_CHARS, OutgoingFile
from nanobot_lambda.core.ports import Workspace
from nanobot_lambda.core.tool_schema import ToolArguments
from nanobot_lambda.core.tools import Tool
from nanobot_lambda.core.workspace import WriteConflict
from nanobot_lambda.tools.context import JobContext
from nanobot_lambda.tools.files import tool_path

GENERATED_FOLDER = "uploads/generated"
MAX_SOURCE_BYTES = 20 * 1024 * 1024  # image edit endpoints take files up to about 20-50 MB


class GenerateImageTool(Tool[JobContext]):
    name = "generate_image"
    description = (
        "Make an image from a description and send it to this chat as a photo (it is also "
        "kept in the workspace). To change an image instead (one the person sent, in "
        "uploads/, or one made before), give its path as `image`. Describe the picture fully: "
        "the image model sees nothing of the conversation."
    )

    class Arguments(ToolArguments):
        prompt: str = Field(min_length=1, max_length=4000)
        image: str | None = Field(None, min_length=1)
        caption: str | None = Field(None, max_length=MAX_CAPTION_CHARS)

    mutates = True

    def __init__(self, images: ImageGenerator, timeout: float) -> None:
        self._images = images  # metered for each job: its chat pays, within its limits
        self._timeout = timeout

    def seconds_needed(self, arguments: dict[str, Any]) -> float:
        return self._timeout + 15  # the image, then its upload to S3 and to Telegram

    def run(
        self,
        ctx: JobContext,
        /,
        prompt: str,
        image: str | None = None,
        caption: str | None = None,
    ) -> str:
        outbox, workspace = ctx.run_outbox(), ctx.workspace
        source = _source(workspace, image) if image else None
        stem = f"{GENERATED_FOLDER}/{ctx.call_key()}"
        path, data = _made_before(workspace, stem)
        if data is None:
            images = ctx.meter.metered_images(self._images)
            assert images is not None
            try:
                made = images.generate(prompt, source=source)
            except ModelError as error:
                raise ToolError(f"{error}. Nothing was sent.") from None
            path = stem + made.extension
            data = made.data
            try:
                workspace.write(path, data, if_none_match=True)
            except WriteConflict:  # made and kept by an earlier run of this call: send that one
                kept = workspace.read(path, fresh=True)
                data = kept.data if kept is not None else data
        name = path.rsplit("/", 1)[1]
        outgoing = OutgoingFile(name, data, "photo", caption.strip() if caption else None)
        try:
            outbox.send_file(ctx.chat_id, outgoing, ctx.thread_id)
        except ChannelError as error:
            raise ToolError(
                f"the image was made ({path}) but Telegram refused it: {error}"
            ) from None
        return f"Made the image and sent it to the chat as a photo; it is kept at {path}."


def _made_before(workspace: Workspace, stem: str) -> tuple[str, bytes | None]:
    for extension in (".png", ".jpg", ".webp"):
        kept = workspace.read(stem + extension)
        if kept is not None:
            return stem + extension, kept.data
    return stem, None


def _source(workspace: Workspace, value: str) -> bytes:
    path = tool_path(value)
    file = workspace.read(path)
    if file is None:
        raise ToolError(f"file not found: {path}. Use list_dir to see what exists.")
    if len(file.data) > MAX_SOURCE_BYTES:
        raise ToolError(f"{path} is larger than 20 MB: too large to change")
    if image_extension(file.data) is None:
        raise ToolError(f"{path} is not a PNG, JPEG or WebP image")
    return file.data
