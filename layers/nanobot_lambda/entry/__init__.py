"""Each function's logic, composed from the core, the tools and the adapters: the webhook,
the scheduler, and agent_turn (a package of its own). The handlers in `functions/` build their
adapters and call into here."""
