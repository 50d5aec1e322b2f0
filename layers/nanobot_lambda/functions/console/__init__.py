"""The owner's console: a Telegram Mini App served by its own small function (functions/console).

`api.py` answers `GET /console` (the page, `page.py`) and `POST /console/api/<route>`: the
launch data checked and the person's scope resolved (`auth.py`), then one view of memory,
skills, schedules, hooks, people, models, spending or activity, each through the core code the
chat's commands use. It never imports litellm (the page's history search is by words).
"""
