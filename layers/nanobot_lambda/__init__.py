"""nanobot-lambda: a personal AI assistant in Telegram on AWS serverless."""
