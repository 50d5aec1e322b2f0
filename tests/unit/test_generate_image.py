"""generate_image: an image made by IMAGE_MODEL, kept in the scope's workspace and sent once as a
photo, also when a later run of the turn runs the same call again; clear errors for the model."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field

import pytest

from nanobot_lambda.core.errors import ChannelError, ModelError
from nanobot_lambda.core.images import GeneratedImage, image_extension
from nanobot_lambda.core.model import ToolCall
from nanobot_lambda.core.outgoing import OutgoingFile
from nanobot_lambda.core.tools import ToolRegistry
from nanobot_lambda.tools.context import JobContext
from nanobot_lambda.tools.images import GenerateImageTool
from tests.support.fakes import MemoryWorkspace, ScriptedModel, text, tool
from tests.support.job_context import job_context
from tests.unit.test_turns import Bot, message

PNG = b"\x89PNG\r\n\x1a\n" + b"\x01" * 32
JPEG = b"\xff\xd8\xff\xe0" + b"\x02" * 32


@dataclass
class Images:
    """An image model that makes a different picture each time, as real ones do."""

    refuse: bool = False
    prompts: list[tuple[str, bytes | None]] = field(default_factory=list)

    def generate(self, prompt: str, *, source: bytes | None = None) -> GeneratedImage:
        self.prompts.append((prompt, source))
        if self.refuse:
            raise ModelError("the image model refused this prompt (status 400): rephrase it")
        return GeneratedImage(PNG + bytes([len(self.prompts)]), ".png", 0.04)


@dataclass
class Outbox:
    files: list[tuple[int, OutgoingFile, int | None]] = field(default_factory=list)

    def send(
        self,
        chat_id: int,
        text: str,
        thread_id: int | None = None,
        *,
        record: bool = True,
        buttons: Sequence[str] = (),
    ) -> bool:
        raise AssertionError("generate_image sends no text")

    def send_file(self, chat_id: int, file: OutgoingFile, thread_id: int | None = None) -> bool:
        self.files.append((chat_id, file, thread_id))
        return True


Registry = tuple[ToolRegistry[JobContext], JobContext]


def setup(images: Images, workspace: MemoryWorkspace) -> tuple[Registry, Outbox]:
    outbox = Outbox()
    ctx = job_context(workspace, chat_id=222, thread_id=5, outbox=outbox, turn_id="turn-1")  # type: ignore[arg-type]
    return (ToolRegistry([GenerateImageTool(images, timeout=60)]), ctx), outbox


def call(registry: Registry, call_id: str = "call_1", **arguments: str) -> str:
    tools, ctx = registry
    return tools.execute(ctx, ToolCall(call_id, "generate_image", json.dumps(arguments)))


def test_an_image_is_made_kept_and_sent_as_a_photo() -> None:
    images, workspace = Images(), MemoryWorkspace()
    registry, outbox = setup(images, workspace)
    result = call(registry, prompt="a red fox in snow", caption="Your fox")

    ((chat_id, sent, thread_id),) = outbox.files
    assert (chat_id, thread_id, sent.kind, sent.caption) == (222, 5, "photo", "Your fox")
    (path,) = [p for p in workspace.files if p.startswith("uploads/generated/")]
    assert workspace.files[path] == sent.data and path.endswith(".png")
    assert f"kept at {path}" in result and images.prompts == [("a red fox in snow", None)]


def test_the_same_call_run_again_sends_the_same_image_and_pays_once() -> None:
    """The invocation died after the image was made: the step's calls run again with the same
    ids, so the kept image is sent (the journaled outbox then skips it if Telegram has it)."""
    images, workspace = Images(), MemoryWorkspace()
    registry, outbox = setup(images, workspace)
    call(registry, prompt="a red fox")
    call(registry, prompt="a red fox")

    assert len(images.prompts) == 1
    assert outbox.files[0][1] == outbox.files[1][1]  # the same photo: the outbox's identity
    call(registry, "call_2", prompt="a blue fox")  # another call makes another image
    assert len(images.prompts) == 2 and outbox.files[2][1].data != outbox.files[0][1].data


def test_an_image_the_person_sent_is_changed() -> None:
    images, workspace = Images(), MemoryWorkspace({"uploads/cat.jpg": JPEG})
    registry, outbox = setup(images, workspace)
    call(registry, prompt="give the cat a hat", image="uploads/cat.jpg")
    assert images.prompts == [("give the cat a hat", JPEG)] and len(outbox.files) == 1


@pytest.mark.parametrize(
    ("image", "says"),
    [
        ("uploads/missing.png", "file not found: uploads/missing.png"),
        ("notes.md", "notes.md is not a PNG, JPEG or WebP image"),
        ("../../etc/passwd", "Error: "),
    ],
)
def test_a_source_that_is_no_image_is_the_model_s_error(image: str, says: str) -> None:
    images, workspace = Images(), MemoryWorkspace({"notes.md": "# notes"})
    registry, outbox = setup(images, workspace)
    assert says in call(registry, prompt="change it", image=image)
    assert images.prompts == [] and outbox.files == []


def test_a_refused_prompt_is_told_to_the_model_and_nothing_is_kept_or_sent() -> None:
    images, workspace = Images(refuse=True), MemoryWorkspace()
    registry, outbox = setup(images, workspace)
    result = call(registry, prompt="something the provider refuses")
    assert "refused this prompt" in result and "Nothing was sent" in result
    assert outbox.files == [] and not workspace.files


def test_image_bytes_are_recognised_by_their_signature() -> None:
    assert image_extension(PNG) == ".png" and image_extension(JPEG) == ".jpg"
    assert image_extension(b"RIFF\x00\x00\x00\x00WEBPVP8 ") == ".webp"
    assert image_extension(b"<html>") is None


# -- in a turn ---------------------------------------------------------------------------------


def image_bot(images: Images) -> Bot:
    call = json.dumps({"prompt": "a red fox in snow"})
    return Bot(
        ScriptedModel(
            tool("generate_image", call), text("Here is your fox."), text("Here is your fox.")
        ),
        images=images,
    )


def test_a_turn_s_image_is_made_and_sent_once_though_the_turn_runs_again() -> None:
    """The final answer fails (SQS retries the job) after the image was sent: the retry finds
    the step recorded and the image kept, and sends neither it nor its cost again."""
    images = Images()
    bot = image_bot(images)
    bot.channel.fail_on = "Here is your fox."
    with pytest.raises(ChannelError):
        bot.process(message("draw me a fox"))
    bot.process(message("draw me a fox"))

    assert len(images.prompts) == 1
    assert [sent.kind for _, sent, _ in bot.channel.files_sent] == ["photo"]
    assert bot.said == ["Here is your fox."]
    assert any(path.startswith("uploads/generated/") for path in bot.workspace.files)


def test_without_an_image_model_no_tool_is_offered() -> None:
    bot = Bot(ScriptedModel(text("I cannot draw.")))
    bot.process(message("draw me a fox"))
    offered = {t["function"]["name"] for t in bot.model.requests[0][1]}
    assert "generate_image" not in offered and "send_file" in offered
    bot = image_bot(Images())
    bot.process(message("draw me a fox"))
    assert "generate_image" in {t["function"]["name"] for t in bot.model.requests[0][1]}


def test_another_person_s_image_is_kept_in_their_scope_and_sent_to_their_chat() -> None:
    bot = image_bot(Images())
    bot.settings["ALLOW_FROM"] = "111111111,222222222"
    bot.__post_init__()
    job = message("draw me a fox")
    job.update["message"]["from"]["id"] = job.update["message"]["chat"]["id"] = 222222222
    bot.process(job)

    ((chat_id, _, _),) = bot.channel.files_sent
    assert chat_id == 222222222
    assert not any(path.startswith("uploads/") for path in bot.workspace.files)  # not the owner's
    assert any(
        path.startswith("uploads/generated/") for path in bot.scopes["people/222222222"].files
    )
