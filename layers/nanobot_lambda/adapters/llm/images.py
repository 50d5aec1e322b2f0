"""Image generation through litellm (`IMAGE_MODEL`): OpenAI gpt-image and DALL·E, Bedrock
(Titan, Stability, Nova Canvas), Vertex Imagen… whatever litellm's image_generation reaches;
with a source image, litellm's image_edit (for the models that edit).

Credentials as for speech: the chat model's key and base URL only for a model of the same
provider, otherwise litellm's own provider variables. The image comes back as base64 where the
provider can say so; a provider that only answers with a URL is fetched (bounded in size and
time). litellm is imported on first use, so building this costs nothing.
"""

from __future__ import annotations

import base64
import importlib
import io
from typing import Any

from nanobot_lambda.adapters.llm.transcription import provider_of
from nanobot_lambda.core.errors import ModelError
from nanobot_lambda.core.images import GeneratedImage, image_extension
from nanobot_lambda.core.outgoing import MAX_PHOTO_BYTES
from nanobot_lambda.settings import AgentSettings

MAX_PROMPT_CHARS = 4_000  # OpenAI's image endpoints take 4,000 (DALL·E 3) to 32,000 characters
URL_FETCH_SECONDS = 30
_REFUSALS = ("content_policy", "safety", "moderation")


class LitellmImageGenerator:
    def __init__(self, model: str, size: str | None, settings: AgentSettings) -> None:
        self._model = model
        self._options: dict[str, Any] = {
            "timeout": settings.llm_timeout_seconds,
            "max_retries": settings.llm_num_retries,
        }
        if size:
            self._options["size"] = size
        if provider_of(model) == provider_of(settings.llm_model):
            if settings.llm_api_base:
                self._options["api_base"] = settings.llm_api_base
            if settings.llm_api_key is not None:
                self._options["api_key"] = settings.llm_api_key.get_secret_value()

    def generate(self, prompt: str, *, source: bytes | None = None) -> GeneratedImage:
        importlib.import_module("nanobot_lambda.adapters.llm.litellm_model")  # configures litellm
        import litellm

        try:
            if source is None:
                response = litellm.image_generation(
                    prompt=prompt[:MAX_PROMPT_CHARS], model=self._model, n=1, **self._options
                )
            else:
                response = litellm.image_edit(
                    image=_named_file(source),
                    prompt=prompt[:MAX_PROMPT_CHARS],
                    model=self._model,
                    n=1,
                    **self._options,
                )
            data = _image_bytes(response)
        except ModelError:
            raise
        except Exception as error:
            raise ModelError(_describe(error)) from None
        extension = image_extension(data)
        if extension is None:
            raise ModelError("image generation failed (the answer held no PNG, JPEG or WebP)")
        return GeneratedImage(data, extension, _cost(response))


def _named_file(data: bytes) -> io.BytesIO:
    """The source as litellm 1.102 uploads it: a file object with a name (a (name, bytes)
    tuple fails inside it)."""
    file = io.BytesIO(data)
    file.name = f"image{image_extension(data) or '.png'}"
    return file


def _image_bytes(response: Any) -> bytes:
    items = getattr(response, "data", None) or []
    if not items:
        raise ModelError("image generation failed (no image in the answer)")
    item = items[0]
    encoded = getattr(item, "b64_json", None)
    if encoded:
        return base64.b64decode(encoded)
    url = getattr(item, "url", None)
    if url:
        return _fetch(url)
    raise ModelError("image generation failed (no image in the answer)")


def _fetch(url: str) -> bytes:
    """An image the provider left at a URL of its own (https only), at most a photo's size."""
    import requests

    if not url.startswith("https://"):
        raise ModelError("image generation failed (the image URL is not https)")
    try:
        with requests.get(url, timeout=URL_FETCH_SECONDS, stream=True) as response:
            response.raise_for_status()
            data = b""
            for chunk in response.iter_content(64 * 1024):
                data += chunk
                if len(data) > MAX_PHOTO_BYTES:
                    raise ModelError("image generation failed (the image is larger than 10 MB)")
            return data
    except requests.RequestException as error:
        raise ModelError(f"image download failed ({type(error).__name__})") from None


def _describe(error: Exception) -> str:
    """The failure's kind and status only (provider errors may quote the prompt); a prompt the
    provider refused says so, so the model can tell the person rather than retry."""
    status = getattr(error, "status_code", None)
    text = str(error).lower()
    if any(word in text for word in _REFUSALS):
        return f"the image model refused this prompt (status {status}): rephrase it"
    return f"image generation failed ({type(error).__name__}, status {status})"


def _cost(response: Any) -> float | None:
    cost = (getattr(response, "_hidden_params", None) or {}).get("response_cost")
    return float(cost) if isinstance(cost, int | float) else None


def image_generator_for(settings: AgentSettings) -> LitellmImageGenerator | None:
    """The configured generator, or None when `IMAGE_MODEL` is unset (no generate_image tool)."""
    if not settings.image_model:
        return None
    return LitellmImageGenerator(settings.image_model, settings.image_size, settings)
