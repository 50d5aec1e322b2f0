"""The subject of a queued Telegram update (core/subjects.py): the chat, topic and person the
webhook judged it by (`places.place_of`): a message's chat and sender, a pressed button's presser
in the chat of the message it was under.

The other job kinds carry their chat; each kind says where its subject comes from where it is
declared (functions/agent_turn/kinds.py).
"""

from __future__ import annotations

from nanobot_lambda.adapters.telegram.models import Update
from nanobot_lambda.adapters.telegram.places import Ignored, place_of
from nanobot_lambda.core.subjects import NoSubject, Subject, subject_in


def subject_of_update(update: Update | None, owner: int | None) -> Subject:
    """Whom a queued update is for and where it answers (`update`: None when the queued update
    is not one); `owner` is OWNER_ID. Raises NoSubject for an update with no such place."""
    if update is None:
        raise NoSubject("the queued update is not a Telegram update")
    place = place_of(update)
    if isinstance(place, Ignored):
        raise NoSubject(f"the queued update has no chat to answer in ({place.reason})")
    return subject_in(
        place.chat.id, thread_id=place.thread_id, person_id=place.sender.id, owner=owner
    )
