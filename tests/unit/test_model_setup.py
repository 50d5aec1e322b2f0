"""A model that cannot answer as set up (core/model_setup.py): the chat is told that the owner
knows, the owner what to fix, once per problem and day."""

from __future__ import annotations

from datetime import UTC, datetime

from nanobot_lambda.adapters.telegram.formatting import html_to_plain_text, render_messages
from nanobot_lambda.core import texts
from nanobot_lambda.core.errors import ModelError
from nanobot_lambda.core.jobs import TelegramUpdateJob
from nanobot_lambda.core.model_setup import CHAT_TEXT, OWNER_CHAT_TEXT, ModelSetupProblem
from tests.support.fakes import ScriptedModel
from tests.unit.test_turns import ADA, Bot, message

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


# -- in a turn ---------------------------------------------------------------------------------


BEA = 222222222


def said_to(bot: Bot, chat_id: int) -> list[str]:
    return [html_to_plain_text(text) for chat, text, _ in bot.channel.sent if chat == chat_id]


def texts_load(name: str) -> str:
    return html_to_plain_text(render_messages(texts.load(name))[0])


def _person_message(words: str, user_id: int, update_id: int) -> TelegramUpdateJob:
    job = message(words, update_id)
    job.update["message"]["from"]["id"] = job.update["message"]["chat"]["id"] = user_id
    return job


def test_a_setup_problem_tells_the_chat_the_owner_knows_and_the_owner_what_to_fix_once() -> None:
    refused = ModelError(
        "openai/x: AuthenticationError (status 401)",
        setup_problem="openai/x: the API key was refused (401)",
    )
    bot = Bot(ScriptedModel(refused, refused, refused), settings={"ALLOW_FROM": f"{ADA},{BEA}"})
    bot.process(_person_message("hi", BEA, 1))
    bot.process(_person_message("hello?", BEA, 2))

    to_bea = said_to(bot, BEA)
    to_ada = said_to(bot, ADA)
    assert to_bea == [texts_load("model_setup_error")] * 2  # not "try again in a moment"
    assert len(to_ada) == 1 and "the API key was refused (401)" in to_ada[0]  # once a day

    bot.process(message("and me?", 3))  # the owner's own chat: told the fix, every time
    to_ada = said_to(bot, ADA)
    assert to_ada[-1] == texts_load("model_setup_error_owner")
    assert "the API key was refused" in to_ada[-2]


def test_a_passing_failure_keeps_the_usual_apology() -> None:
    bot = Bot(ScriptedModel(ModelError("openai/x: RateLimitError (status 429)")))
    bot.process(message("hi", 4))
    assert bot.said == [texts_load("model_error")]
