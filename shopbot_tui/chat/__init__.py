"""The chat screen and what it owns: turns, the approval dialog, drafts, notices, export."""
