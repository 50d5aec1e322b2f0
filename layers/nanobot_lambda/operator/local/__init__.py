"""The local stack: the deployed functions in-process against moto (chat and tests)."""
