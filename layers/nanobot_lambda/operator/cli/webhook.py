"""`webhook set|info|delete`: where Telegram sends the bot's updates."""

from __future__ import annotations

import argparse
from datetime import UTC, datetime
from typing import Any

from nanobot_lambda.core.bot_commands import BOT_COMMANDS
from nanobot_lambda.operator.cli.common import (
    add_command,
    add_env_file_option,
    add_stack_option,
    deployment,
)
from nanobot_lambda.operator.ops.deployment import SECRET_TOKEN_PARAMETER, Deployment, OperatorError
from nanobot_lambda.operator.ops.webhook_admin import (
    ALLOWED_UPDATES,
    WebhookInfo,
    delete_webhook,
    set_command_menu,
    set_menu_button,
    set_webhook,
    webhook_info,
)


def register(commands: Any) -> None:
    group = add_command(
        commands,
        "webhook",
        help="register the deployed webhook with Telegram, show or remove it",
        description="The bot's webhook. The URL is the stack's WebhookUrl output; the secret "
        "token Telegram sends with each update is the stack's SSM parameter "
        "(TelegramSecretTokenParameter), generated and stored as a SecureString if it does not "
        "exist. The bot token is the stack's (TelegramBotTokenParameter), or TELEGRAM_BOT_TOKEN "
        "without --stack.",
        examples=[
            "nanobot-lambda webhook set --stack nanobot-lambda",
            "nanobot-lambda webhook info --stack nanobot-lambda",
            "nanobot-lambda webhook delete      (with TELEGRAM_BOT_TOKEN, before `poll`)",
        ],
    )
    actions = group.add_subparsers(dest="action", required=True, metavar="ACTION")
    set_parser = add_command(
        actions,
        "set",
        help="point Telegram at the stack's webhook, with the secret token",
        description="Call setWebhook with the stack's WebhookUrl (or --url), the secret token "
        f"from SSM (created if missing) and allowed_updates {list(ALLOWED_UPDATES)}, the update "
        "kinds the bot handles. Pending updates are kept unless --drop-pending-updates.",
        examples=[
            "nanobot-lambda webhook set --stack nanobot-lambda",
            "nanobot-lambda webhook set --stack nanobot-lambda --drop-pending-updates",
            "nanobot-lambda webhook set --stack nanobot-lambda --url https://bot.example.com/webhook",
        ],
        handler=set_command,
    )
    set_parser.add_argument("--url", help="webhook URL (default: the stack's WebhookUrl output)")
    set_parser.add_argument(
        "--drop-pending-updates",
        action="store_true",
        help="discard the updates Telegram is holding for the bot",
    )
    info = add_command(
        actions,
        "info",
        help="what Telegram knows of the webhook (URL, pending updates, last error)",
        description="Show getWebhookInfo: the URL (and whether it is the stack's), the updates "
        "waiting, and the last delivery error Telegram saw.",
        examples=[
            "nanobot-lambda webhook info --stack nanobot-lambda",
            "nanobot-lambda webhook info      (with TELEGRAM_BOT_TOKEN)",
        ],
        handler=info_command,
    )
    info.add_argument("--url", help="the URL expected (default: the stack's WebhookUrl output)")
    delete = add_command(
        actions,
        "delete",
        help="remove the webhook (updates then wait for getUpdates, e.g. `poll`)",
        description="Call deleteWebhook. Telegram then keeps the bot's updates for getUpdates "
        "(`nanobot-lambda poll`) until a webhook is set again.",
        examples=[
            "nanobot-lambda webhook delete --stack nanobot-lambda",
            "TELEGRAM_BOT_TOKEN=123456:ABC... nanobot-lambda webhook delete",
        ],
        handler=delete_command,
    )
    delete.add_argument(
        "--drop-pending-updates", action="store_true", help="discard the pending updates too"
    )
    for action in (set_parser, info, delete):
        add_stack_option(action)
        add_env_file_option(action)


def _expected_url(target: Deployment, arguments: argparse.Namespace) -> str | None:
    url: str | None = getattr(arguments, "url", None) or target.webhook_url
    return url


def set_command(arguments: argparse.Namespace) -> int:
    target = deployment(arguments)
    url = _expected_url(target, arguments)
    if not url:
        raise OperatorError("no webhook URL: give --stack NAME (its WebhookUrl output) or --url")
    bot = target.telegram()
    secret, created = target.ensure_secret_token()
    name = target.parameter_name(SECRET_TOKEN_PARAMETER)
    if created:
        print(f"Generated a secret token and stored it in SSM {name} (SecureString).")
    set_webhook(bot, url, secret, drop_pending_updates=arguments.drop_pending_updates)
    print(f"Webhook set: {url} (allowed updates: {', '.join(ALLOWED_UPDATES)}).")
    set_command_menu(bot)
    print(f"Command menu set: {' '.join('/' + command for command, _ in BOT_COMMANDS)}.")
    console = target.console_url
    set_menu_button(bot, console)
    if console:
        print(f"Menu button of private chats: the console, {console}.")
    else:
        print("Menu button of private chats: the commands (the stack has no console).")
    if created and target.stack is not None:
        print(
            "The webhook function reads the secret when it starts: if it was running, "
            "it picks the new one up within 5 minutes."
        )
    _print_info(webhook_info(bot), url)
    return 0


def info_command(arguments: argparse.Namespace) -> int:
    target = deployment(arguments)
    _print_info(webhook_info(target.telegram()), _expected_url(target, arguments))
    return 0


def delete_command(arguments: argparse.Namespace) -> int:
    target = deployment(arguments)
    delete_webhook(target.telegram(), drop_pending_updates=arguments.drop_pending_updates)
    dropped = " and its pending updates" if arguments.drop_pending_updates else ""
    print(f"Webhook removed{dropped}: updates now wait for getUpdates (nanobot-lambda poll).")
    return 0


def _print_info(info: WebhookInfo, expected: str | None) -> None:
    if not info.url:
        print("url:              (none: updates wait for getUpdates)")
    else:
        match = ""
        if expected is not None:
            match = "  (the stack's)" if info.url == expected else f"  (NOT {expected})"
        print(f"url:              {info.url}{match}")
    print(f"pending updates:  {info.pending_update_count}")
    if info.allowed_updates is not None:
        print(f"allowed updates:  {', '.join(info.allowed_updates) or '(all but a few)'}")
    if info.last_error_at is not None:
        ago = datetime.now(UTC) - info.last_error_at
        minutes = int(ago.total_seconds() // 60)
        print(
            f"last error:       {info.last_error_at:%Y-%m-%d %H:%M UTC} ({minutes} min ago): "
            f"{info.last_error_message}"
        )
    else:
        print("last error:       none")
