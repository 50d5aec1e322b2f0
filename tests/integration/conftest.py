"""Integration fixtures: the template's resources, created on moto server (real HTTP)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from nanobot_lambda.adapters.llm.litellm_model import retries
from nanobot_lambda.operator.local.cfn import TemplateContext, load_template
from nanobot_lambda.operator.local.resources import create_resources
from tests.conftest import TEMPLATE
from tests.support.providers import PROVIDERS, Provider


@pytest.fixture
def resources(aws: str) -> TemplateContext:
    """Every stateful resource of infra/template.yaml, freshly named for this test."""
    context = TemplateContext(
        load_template(TEMPLATE), parameters={"AllowFrom": "111111111", "LlmModel": "openai/x"}
    )
    create_resources(context, f"it-{uuid.uuid4().hex[:8]}")
    return context


@pytest.fixture(scope="module")
def providers() -> Iterator[dict[str, Provider]]:
    """Every provider's stand-in (tests/support/providers.py), started once per module."""
    started = {name: kind() for name, kind in PROVIDERS.items()}
    yield started
    for provider in started.values():
        provider.stop()


@pytest.fixture(params=list(PROVIDERS))
def provider(
    request: pytest.FixtureRequest,
    providers: dict[str, Provider],
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[Provider]:
    """Each provider in turn (or those a test names: `parametrize("provider", […],
    indirect=True)`), its script and records empty. Retries do not sleep; a test fails that
    sent what the provider would have refused."""
    monkeypatch.setattr(retries, "RETRY_FIRST_PAUSE", 0.0)
    chosen = providers[request.param]
    chosen.reset()
    yield chosen
    assert chosen.refusals() == []
