"""Image generation through litellm, against the scripted server's /images/generations and
/images/edits (OpenAI's image API): the image, its price, the key it is sent with, a refusal."""

from __future__ import annotations

import json

import pytest

from nanobot_lambda.adapters.llm.images import LitellmImageGenerator, image_generator_for
from nanobot_lambda.core.errors import ModelError
from nanobot_lambda.settings import AgentSettings
from tests.support.scripted_model import ScriptedModelServer
from tests.support.settings import AGENT_ENV


def settings_for(server: ScriptedModelServer, **extra: str) -> AgentSettings:
    return AgentSettings.model_validate(
        {
            **AGENT_ENV,
            **server.env(api_key="sk-test-123"),
            "LLM_NUM_RETRIES": "0",
            "IMAGE_MODEL": ScriptedModelServer.IMAGE_MODEL,
            **extra,
        }
    )


def generator(server: ScriptedModelServer, **extra: str) -> LitellmImageGenerator:
    made = image_generator_for(settings_for(server, **extra))
    assert made is not None
    return made


def test_an_image_is_made_with_our_key_and_priced(model_server: ScriptedModelServer) -> None:
    image = generator(model_server, IMAGE_SIZE="1024x1024").generate("a red fox in snow")

    assert image.data == ScriptedModelServer.IMAGE and image.extension == ".png"
    assert image.cost_usd is not None and image.cost_usd > 0.01  # priced by its tokens
    ((path, body),) = model_server.images
    request = json.loads(body)
    assert path.endswith("/v1/images/generations")
    assert request["prompt"] == "a red fox in snow" and request["size"] == "1024x1024"
    assert request["model"] == "gpt-image-1" and request["n"] == 1


def test_an_image_is_changed_from_a_source(model_server: ScriptedModelServer) -> None:
    source = b"\x89PNG\r\n\x1a\n" + b"the person's photo"
    image = generator(model_server).generate("give it a hat", source=source)
    assert image.data == ScriptedModelServer.IMAGE
    ((path, body),) = model_server.images
    assert path.endswith("/v1/images/edits") and source in body and b"give it a hat" in body


def test_a_refused_prompt_says_so_without_the_prompt_or_key(
    model_server: ScriptedModelServer,
) -> None:
    model_server.image_refusals = 1
    with pytest.raises(ModelError, match="refused this prompt") as error:
        generator(model_server).generate("a secret prompt about sk-test-123")
    assert "secret prompt" not in str(error.value) and "sk-test-123" not in str(error.value)


def test_no_image_model_no_generator(model_server: ScriptedModelServer) -> None:
    settings = AgentSettings.model_validate({**AGENT_ENV, **model_server.env()})
    assert image_generator_for(settings) is None
