"""The `shopbot` command's sub-commands, headless over the same backend."""
