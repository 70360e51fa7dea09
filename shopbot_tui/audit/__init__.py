"""The audit-log viewer."""
