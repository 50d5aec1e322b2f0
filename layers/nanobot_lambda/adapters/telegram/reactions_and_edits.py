"""Reactions and edits as the webhook records them (core/reactions_and_edits.py): a reaction is
placed like a message (its chat, the person who reacted) and judged by the same allow-list, then
recorded, never queued; an edit the bot answers is recorded (`edit_of`) and queued like a
message, and a message's turn reads it as the edit left it (`as_edited`)."""

from __future__ import annotations

from nanobot_lambda.adapters.telegram.contents import message_text, too_long
from nanobot_lambda.adapters.telegram.models import Message, Update
from nanobot_lambda.adapters.telegram.places import Ignored, place_of, session_key_for
from nanobot_lambda.core.reactions_and_edits import Edit, Reaction


def reaction_of(update: Update) -> Reaction | Ignored:
    """The reaction to record from a `message_reaction` update, or why there is none."""
    reacted = update.message_reaction
    place = place_of(update)
    if reacted is None or isinstance(place, Ignored):
        return place if isinstance(place, Ignored) else Ignored(f"update kind {update.kind}")
    return Reaction(
        chat_id=place.chat.id,
        message_id=reacted.message_id,
        person_id=place.sender.id,
        emojis=tuple(reaction.shown for reaction in reacted.new_reaction),
        date=reacted.date,
    )


def edit_of(update: Update) -> Edit | None:
    """The edit to record from an `edited_message` update the bot answers (`to_inbound`)."""
    edited = update.edited_message
    place = place_of(update)
    if edited is None or isinstance(place, Ignored) or not _answers_edit(edited):
        return None
    return Edit(
        session_key=session_key_for(place.chat.id, place.thread_id),
        chat_id=place.chat.id,
        message_id=edited.message_id,
        update_id=update.update_id,
        edit_date=edited.edit_date or edited.date,
        text=message_text(edited),
    )


def _answers_edit(edited: Message) -> bool:
    """An edit with text is queued like a message. In a group, whether the edited message is
    for the bot needs the bot's identity: its turn checks (`addressed_to_bot`), as for every
    group message."""
    return not too_long(edited) and bool(message_text(edited))


def as_edited(message: Message, edit: Edit) -> Message:
    """`message` as `edit` left it (an edit recorded before the message's turn ran): its text,
    or its caption, is the edit's; its files are those it was sent with. The edit's entities
    are not recorded: the edited text has none (a @mention in it stays as written)."""
    if message.text is not None:
        return message.model_copy(update={"text": edit.text, "entities": []})
    # An edit's text is the caption after the notes on the files (`message_text`).
    notes = message_text(message.model_copy(update={"caption": None}))
    caption = edit.text.removeprefix(notes).strip() if notes else edit.text
    return message.model_copy(update={"caption": caption or None, "caption_entities": []})
