"""`chat` shows a reply growing on its line from the drafts, finished by its message."""

from __future__ import annotations

import dataclasses
import io

from nanobot_lambda.operator.cli.live import LiveReplies
from nanobot_lambda.operator.local.bot_api import SentDraft, SentFile, SentMessage


def draft(text: str, draft_id: int = 7) -> SentDraft:
    return SentDraft(chat_id=1, draft_id=draft_id, text=text, plain_text=text, thread_id=None, at=0)


def message(text: str) -> SentMessage:
    return SentMessage(
        chat_id=1, message_id=1, text=text, plain_text=text, parse_mode=None, thread_id=None
    )


def test_a_reply_grows_on_one_line_and_its_message_finishes_it() -> None:
    out = io.StringIO()
    replies = LiveReplies(out)
    replies.draft(draft("The plan"))
    replies.draft(draft("The plan for today"))
    replies.message(message("The plan for today is coffee."))
    replies.message(message("Anything else?"))

    assert out.getvalue() == "nanobot> The plan for today is coffee.\nnanobot> Anything else?\n"


def test_a_draft_that_does_not_continue_the_line_starts_a_new_one() -> None:
    out = io.StringIO()
    replies = LiveReplies(out)
    replies.draft(draft("Wrong start"))
    replies.draft(draft("Right", draft_id=8))  # another message, or a retried stream
    replies.message(message("Right answer"))

    assert out.getvalue() == "nanobot> Wrong start\nnanobot> Right answer\n"


def test_a_file_shows_on_its_own_line_with_its_size_and_caption() -> None:
    out = io.StringIO()
    replies = LiveReplies(out)
    replies.draft(draft("Here is"))
    replies.file(sent_file("photo", "plot.png", 12_595, "Sales by month"))
    replies.file(sent_file("document", "notes.txt", 20, None))
    replies.file(sent_file("voice", "reply.ogg", 3 * 1024 * 1024, ""))

    assert out.getvalue() == (
        "nanobot> Here is\n"
        "nanobot> 📎 photo plot.png (12.3 KB) — Sales by month\n"
        "nanobot> 📎 document notes.txt (20 B)\n"
        "nanobot> 📎 voice reply.ogg (3.0 MB)\n"
    )


def sent_file(field: str, filename: str, size: int, caption: str | None) -> SentFile:
    return SentFile(
        chat_id=1,
        thread_id=None,
        method="send" + field.capitalize(),
        field=field,
        filename=filename,
        caption=caption,
        plain_caption=caption,
        message_id=1,
        file_id="f",
        at=0,
        data=bytes(size),
    )


def test_a_message_s_buttons_show_under_it_a_row_a_line() -> None:
    out = io.StringIO()
    replies = LiveReplies(out)
    replies.draft(draft("Shall"))
    keyboard = ((("Yes", "y"), ("No, thanks", "n")), (("Later", "l"),))
    replies.message(dataclasses.replace(message("Shall I?"), keyboard=keyboard))
    replies.message(message("Fine."))

    assert out.getvalue() == (
        "nanobot> Shall I?\n   [Yes] [No, thanks]\n   [Later]\nnanobot> Fine.\n"
    )
