"""Integration fixtures: the template's resources, created on moto server (real HTTP)."""

from __future__ import annotations

import uuid

import pytest

from nanobot_lambda.operator.local.cfn import TemplateContext, load_template
from nanobot_lambda.operator.local.resources import create_resources
from tests.conftest import TEMPLATE


@pytest.fixture
def resources(aws: str) -> TemplateContext:
    """Every stateful resource of infra/template.yaml, freshly named for this test."""
    context = TemplateContext(
        load_template(TEMPLATE), parameters={"AllowFrom": "111111111", "LlmModel": "openai/x"}
    )
    create_resources(context, f"it-{uuid.uuid4().hex[:8]}")
    return context
