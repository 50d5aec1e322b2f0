"""The subject of every job kind (core/subjects.py), derived in this one place.

A queued Telegram update's chat, topic and person are those the webhook judged it by
(`places.place_of`): a message's chat and sender, a pressed button's presser in the chat of
the message it was under. The other job kinds carry their chat (and topic): a scheduled task's,
a background task's and its announcement's, and a hook event's are the chat that made them;
the heartbeat's is the owner's private chat. A continuation is the subject of the job it continues.

Adding a job kind means adding it here: `subject_of` refuses a kind it does not know rather
than guessing a chat for it.
"""

from __future__ import annotations

from pydantic import ValidationError

from nanobot_lambda.adapters.telegram.models import Update
from nanobot_lambda.adapters.telegram.places import Ignored, place_of
from nanobot_lambda.core.jobs import (
    AnnouncementJob,
    AnyJob,
    ContinuationJob,
    CronTaskJob,
    HeartbeatJob,
    HookEventJob,
    SubagentJob,
    TelegramUpdateJob,
)
from nanobot_lambda.core.subjects import NoSubject, Subject, person_of_chat, subject_in


def subject_of(job: AnyJob, owner: int | None) -> Subject:
    """Whom `job` is for and where it answers; `owner` is OWNER_ID (None: no owner known, and
    every chat shares the owner's workspace). Raises NoSubject for a job with no such place."""
    started = job.job if isinstance(job, ContinuationJob) else job
    if isinstance(started, TelegramUpdateJob):
        return _subject_of_update(started, owner)
    if isinstance(started, CronTaskJob | SubagentJob | AnnouncementJob | HookEventJob):
        thread_id = started.thread_id
    elif isinstance(started, HeartbeatJob):
        thread_id = None
    else:  # pragma: no cover - a job kind added to core/jobs.py but not here
        raise NoSubject(f"no subject is known for a {started.kind} job")
    chat_id = started.chat_id
    return subject_in(chat_id, thread_id=thread_id, person_id=person_of_chat(chat_id), owner=owner)


def _subject_of_update(job: TelegramUpdateJob, owner: int | None) -> Subject:
    try:
        update = Update.model_validate(job.update)
    except ValidationError:
        raise NoSubject("the queued update is not a Telegram update") from None
    place = place_of(update)
    if isinstance(place, Ignored):
        raise NoSubject(f"the queued update has no chat to answer in ({place.reason})")
    return subject_in(
        place.chat.id, thread_id=place.thread_id, person_id=place.sender.id, owner=owner
    )
