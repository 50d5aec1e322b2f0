"""Each deployed function's logic, composed from the core, the tools and the adapters.

It mirrors the handlers, `functions/<name>/app.py` at the repository's root (the public
contract: the template names them), one module or package per handler:

- webhook: `webhook.py` (Telegram's updates) and `inbound_events.py` (its `POST /hooks/{name}`
  route: signed events from outside);
- agent_turn: `agent_turn/` (a queued job per record: the turn, its commands and job kinds);
- scheduler: `scheduler.py` (EventBridge Scheduler's events);
- sandbox: `sandbox.py` and `sandbox_confinement.py` (standard library only: the sandbox's
  handler loads nothing else).

`init_phase.py` and `keep_warm.py` serve every handler. A handler builds its adapters from the
settings, once per container, and calls into here.
"""
