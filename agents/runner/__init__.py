"""The in-process runner the fronts use: turns, decisions, leases and recovery."""
