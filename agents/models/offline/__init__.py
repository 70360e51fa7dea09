"""The offline demo model: a deterministic, rule-based chat model for running without a key."""
