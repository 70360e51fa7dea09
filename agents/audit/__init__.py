"""The audit log: append-only records of every check and decision, their search and writer."""
