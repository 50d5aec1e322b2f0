"""The subject of a job: the chat it answers in (and the forum topic), the person it acts for,
and the scope it works in. Derived in one place for every kind of update and job, and taken
from there by everything that needs to know whose a job is.

agent_turn derives it once per job, before anything runs (`adapters/telegram/subjects.py`,
where queued updates can be parsed: a message's chat, or for a pressed button the chat of the
message it was under; the other job kinds carry their chat), and the job's context holds it
(tools/context.py). From it:
- the context holds the subject's scope's workspace (core/scopes.py), so the file tools, the
  memory in the prompt and recall all read that scope's workspace;
- the context's meter counts and checks spending for the subject's chat (core/usage.py);
- the chat tools and the answer go to the subject's chat and topic;
- a job that fails for good tells the subject's chat.

A job whose subject cannot be derived (a queued update with no chat, or one in a private chat
from someone other than its person) is refused with `NoSubject`: it is never run in the owner's
scope instead, nothing is answered, and it goes to the dead-letter queue for a person to look at.
"""

from __future__ import annotations

from dataclasses import dataclass

from nanobot_lambda.core.errors import NanobotError
from nanobot_lambda.core.scopes import Scope, scope_of_chat


@dataclass(frozen=True)
class Subject:
    """Whom a job is for, and where it answers."""

    chat_id: int
    thread_id: int | None  # a forum topic; None in other chats
    # Who acts: the sender of an update (the one who pressed a button); for a job no one sent
    # just now (a schedule, a background task, the heartbeat), the chat's person in a private
    # chat and None in a group.
    person_id: int | None
    scope: Scope


class NoSubject(NanobotError):
    """A job with no chat, person and scope to run for: refused, never run in another's scope.
    The message names what is missing, never a user's text."""


def subject_in(
    chat_id: int, *, thread_id: int | None, person_id: int | None, owner: int | None
) -> Subject:
    """The subject of a job in `chat_id`: its scope is the chat's (`scope_of_chat`)."""
    return Subject(chat_id, thread_id, person_id, scope_of_chat(chat_id, owner))


def person_of_chat(chat_id: int) -> int | None:
    """A private chat's person (Telegram: user ids are positive, groups' negative)."""
    return chat_id if chat_id > 0 else None
