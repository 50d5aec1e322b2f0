"""Telegram Bot API: update models, formatting, and the HTTP client."""
