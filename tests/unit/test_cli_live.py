"""`chat` shows a reply growing on its line from the drafts, replaced by its message."""

from __future__ import annotations

import dataclasses
import io
from collections.abc import Callable
from pathlib import Path

from nanobot_lambda.adapters.telegram.models import MessageEntity
from nanobot_lambda.operator.cli.live import PRESS_HINT, LiveReplies, button_label, with_link_urls
from nanobot_lambda.operator.cli.terminal import Terminal
from nanobot_lambda.operator.local.bot_api import SentDraft, SentFile, SentMessage
from tests.support.screen import Screen


def draft(text: str, draft_id: int = 7) -> SentDraft:
    return SentDraft(chat_id=1, draft_id=draft_id, text=text, plain_text=text, thread_id=None, at=0)


def message(text: str) -> SentMessage:
    return SentMessage(
        chat_id=1, message_id=1, text=text, plain_text=text, parse_mode=None, thread_id=None
    )


def on_screen(columns: int = 80, lines: int = 24) -> tuple[LiveReplies, Callable[[], str]]:
    """Replies on a terminal of that size; and what its screen shows."""
    out = io.StringIO()
    replies = LiveReplies(Terminal(out, screen=True, size=lambda: (columns, lines)))

    def shown() -> str:
        screen = Screen(columns)
        screen.feed(out.getvalue().replace("\n", "\r\n"))  # the terminal's own translation
        return screen.text

    return replies, shown


def test_a_reply_grows_on_its_line_and_its_message_replaces_it() -> None:
    replies, shown = on_screen()
    replies.draft(draft("The plan"))
    replies.draft(draft("The plan for today"))
    assert shown() == "nanobot> The plan for today"
    replies.message(message("The plan for today is coffee."))
    replies.message(message("Anything else?"))

    assert shown() == "nanobot> The plan for today is coffee.\nnanobot> Anything else?"


def test_the_message_replaces_its_chat_s_draft_whatever_either_reads() -> None:
    """The draft is rendered from unfinished Markdown (a `*` closed as emphasis, a `[` held
    back), the message from the finished text: they need not read the same (issue 37)."""
    replies, shown = on_screen()
    replies.draft(draft("It takes 23 minutes"))
    replies.message(message("It takes 2*3 minutes."))
    replies.draft(draft("You said: pressed the button"))
    replies.message(message('You said: [pressed the button "Black tea"]'))

    assert shown() == (
        'nanobot> It takes 2*3 minutes.\nnanobot> You said: [pressed the button "Black tea"]'
    )


def test_a_draft_that_does_not_continue_the_one_shown_replaces_it() -> None:
    replies, shown = on_screen()
    replies.draft(draft("Wrong start"))
    replies.draft(draft("Right", draft_id=8))  # the next step's text, or a retried stream
    assert shown() == "nanobot> Right"
    replies.message(message("Right answer"))

    assert shown() == "nanobot> Right answer"


def test_a_draft_over_several_rows_is_replaced_whole() -> None:
    replies, shown = on_screen(columns=20)
    replies.draft(draft("a draft that wraps over three rows"))
    assert len(shown().splitlines()) == 3
    replies.message(message("Short."))

    assert shown() == "nanobot> Short."


def test_a_draft_taller_than_the_screen_is_cut_to_fit_and_replaced_whole() -> None:
    replies, shown = on_screen(columns=20, lines=6)
    words = " ".join(f"word{n}" for n in range(40))
    replies.draft(draft(words[:100]))
    replies.draft(draft(words))
    rows = shown().splitlines()
    assert len(rows) == 4 and rows[-1].endswith("…")  # a row for the prompt, one spare
    replies.message(message("Done."))

    assert shown() == "nanobot> Done."


def test_what_comes_while_a_draft_is_shown_goes_above_it() -> None:
    """A file, or a message in another chat: the draft stays the last thing shown."""
    replies, shown = on_screen()
    replies.draft(draft("Here is"))
    replies.file(sent_file("photo", "plot.png", 12_595, "Sales by month"))
    replies.message(dataclasses.replace(message("Elsewhere."), chat_id=2))
    assert shown() == (
        "nanobot> 📎 photo plot.png (12.3 KB) — Sales by month\n"
        "nanobot> Elsewhere.\n"
        "nanobot> Here is"
    )
    replies.message(message("Here is the plot."))

    assert shown().splitlines()[-1] == "nanobot> Here is the plot."
    assert shown().count("Here is") == 1


def test_without_a_screen_only_the_messages_are_written() -> None:
    """`chat -m`, or the chat's output to a file or a pipe: nothing could be erased there."""
    out = io.StringIO()
    replies = LiveReplies(out)
    replies.draft(draft("The plan"))
    replies.message(message("The plan for today is coffee."))
    replies.draft(draft("Here is"))
    replies.file(sent_file("photo", "plot.png", 12_595, "Sales by month"))
    replies.file(sent_file("document", "notes.txt", 20, None))
    replies.file(sent_file("voice", "reply.ogg", 3 * 1024 * 1024, ""))

    assert out.getvalue() == (
        "nanobot> The plan for today is coffee.\n"
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
