"""The conversation list."""
