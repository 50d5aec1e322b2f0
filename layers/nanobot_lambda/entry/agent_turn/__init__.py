"""agent_turn: a queued job in, its turn run, the reply out, the turn saved (see service.py)."""
