"""agent_turn: a queued job in, its turn run, the reply out, the turn saved (dispatch.py hands
each job to its kind; turn.py states the steps every turn takes, in order)."""
