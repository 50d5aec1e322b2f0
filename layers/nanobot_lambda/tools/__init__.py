"""The tools the model calls: files (the workspace), web (search and fetch) and chat (cron,
message, spawn). Each is a `core.tools.Tool`; the registry that validates and runs them is
core's too."""
