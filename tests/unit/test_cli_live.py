"""`chat` shows a reply growing on its line from the drafts, finished by its message."""

from __future__ import annotations

import dataclasses
import io
from pathlib import Path

from nanobot_lambda.adapters.telegram.models import MessageEntity
from nanobot_lambda.operator.cli.live import PRESS_HINT, LiveReplies, button_label, with_link_urls
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
        "nanobot> Shall I?\n   [1 Yes] [2 No, thanks]\n   [3 Later]\n"
        f"{PRESS_HINT}\nnanobot> Fine.\n"
    )
    assert replies.last_keyboard is not None
    assert replies.last_keyboard.plain_text == "Shall I?"  # what /press presses


def test_a_button_is_named_by_its_number_or_its_label() -> None:
    keyboard = ((("Yes", "y"), ("No, thanks", "n")), (("Later", "l"),))
    shown = dataclasses.replace(message("Shall I?"), keyboard=keyboard)

    assert button_label(shown, "1") == "Yes"
    assert button_label(shown, "3") == "Later"  # numbered across the rows, as shown
    assert button_label(shown, "no, THANKS") == "No, thanks"
    assert button_label(shown, "4") is None
    assert button_label(shown, "0") is None
    assert button_label(shown, "Maybe") is None


def test_a_text_link_shows_its_address_after_its_text() -> None:
    out = io.StringIO()
    replies = LiveReplies(out)
    text = "Read 📘 the docs, or https://example.org/faq itself."
    entities = (
        # Offsets in UTF-16 code units: the emoji before the link counts two.
        MessageEntity(type="text_link", offset=8, length=8, url="https://example.org/docs"),
        MessageEntity(type="url", offset=21, length=23),
        MessageEntity(type="bold", offset=0, length=4),
    )
    replies.message(dataclasses.replace(message(text), entities=entities))

    assert out.getvalue() == (
        "nanobot> Read 📘 the docs (https://example.org/docs), or https://example.org/faq itself.\n"
    )


def test_a_link_whose_text_is_its_address_is_not_repeated() -> None:
    entities = (MessageEntity(type="text_link", offset=0, length=15, url="https://a.b/c/d"),)
    assert with_link_urls("https://a.b/c/d", entities) == "https://a.b/c/d"


def test_sent_files_are_saved_under_their_names_never_over_another(tmp_path: Path) -> None:
    out = io.StringIO()
    folder = tmp_path / "chat-files"
    replies = LiveReplies(out, files_dir=folder)
    first = dataclasses.replace(sent_file("document", "notes.txt", 3, None), data=b"one")
    second = dataclasses.replace(first, data=b"two")
    hostile = dataclasses.replace(first, filename="../../etc/passwd\x1b[2J", data=b"x")
    hidden = dataclasses.replace(first, filename=".bashrc", data=b"y", message_id=9)
    for sent in (first, second, hostile, hidden):
        replies.file(sent)

    assert (folder / "notes.txt").read_bytes() == b"one"
    assert (folder / "notes-1.txt").read_bytes() == b"two"
    assert (folder / "passwd_[2J").read_bytes() == b"x"  # no way out of the folder
    assert (folder / "document-9").read_bytes() == b"y"  # no hidden files
    assert sorted(path.name for path in tmp_path.rglob("*") if path.is_file()) == [
        "document-9",
        "notes-1.txt",
        "notes.txt",
        "passwd_[2J",
    ]
    lines = out.getvalue().splitlines()
    assert lines[0] == f"nanobot> 📎 document notes.txt (3 B) → {folder / 'notes.txt'}"
    assert lines[1].endswith(f"→ {folder / 'notes-1.txt'}")
