"""Images the assistant makes (`IMAGE_MODEL`): the port and what it returns.

The `generate_image` tool (tools/images.py) calls it; the adapter is `adapters/llm/images.py`
(litellm's image generation and, given a source image, image editing).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class GeneratedImage:
    data: bytes  # PNG, JPEG or WebP, as the provider made it
    extension: str  # ".png", ".jpg" or ".webp", from the data itself
    cost_usd: float | None = None  # litellm's price, when it knows one


class ImageGenerator(Protocol):
    def generate(self, prompt: str, *, source: bytes | None = None) -> GeneratedImage:
        """An image from `prompt`; with `source`, that image changed as the prompt says.
        Raises ModelError naming the failure's kind (a refused prompt says so), never the
        request."""
        ...


def image_extension(data: bytes) -> str | None:
    """The file extension of an image's bytes, or None when they are no image Telegram shows."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return ".png"
    if data.startswith(b"\xff\xd8\xff"):
        return ".jpg"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return ".webp"
    return None
