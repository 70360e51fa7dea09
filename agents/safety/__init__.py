"""Untrusted text and secrets: redaction, and text made safe to store and show."""
