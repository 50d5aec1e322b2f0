"""A model that cannot answer as set up (core/model_setup.py): the chat is told that the owner
knows, the owner what to fix, once per problem and day."""

from __future__ import annotations

from datetime import UTC, datetime

from nanobot_lambda.core import texts
from nanobot_lambda.core.errors import ModelError
from nanobot_lambda.core.model_setup import CHAT_TEXT, OWNER_CHAT_TEXT, ModelSetupProblem

OWNER = 111
PROBLEM = "fake: the model name names no provider litellm knows; e.g. openai/…, anthropic/…"
NOON = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)


def test_only_a_permanent_model_error_is_a_setup_problem() -> None:
    assert ModelSetupProblem.of(ModelError("openai/x: status 500")) is None
    assert not ModelError("openai/x: status 500").permanent
    error = ModelError("fake: BadRequestError (status 400): …", setup_problem=PROBLEM)
    assert error.permanent
    assert ModelSetupProblem.of(error) == ModelSetupProblem(PROBLEM)


def test_the_chat_is_told_the_owner_knows_and_the_owner_what_to_fix() -> None:
    problem = ModelSetupProblem(PROBLEM)
    assert problem.chat_text(222, OWNER) == CHAT_TEXT
    assert problem.chat_text(OWNER, OWNER) == OWNER_CHAT_TEXT
    assert problem.chat_text(222, None) == CHAT_TEXT
    told = texts.load(CHAT_TEXT)
    assert "not set up right" in told and "owner" in told
    assert "again in a moment" not in told  # the advice for a failure that passes
    notice = problem.owner_notice()
    assert "nanobot-lambda doctor" in notice and "sam deploy --guided" in notice
    # The problem in literal text: its words all there, no Markdown formed from them.
    assert "names no provider litellm knows" in notice
    assert "openai" in notice and "$problem" not in notice


def test_the_owner_hears_of_a_problem_once_a_day() -> None:
    problem = ModelSetupProblem(PROBLEM)
    same_day = problem.notice_key(NOON.replace(hour=23))
    assert problem.notice_key(NOON) == same_day
    assert problem.notice_key(NOON.replace(day=27)) != same_day
    assert ModelSetupProblem("other: 401").notice_key(NOON) != problem.notice_key(NOON)
    assert PROBLEM not in problem.notice_key(NOON)  # a key, not the text
