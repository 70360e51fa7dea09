"""The `shopbot` command's entry point: the collector paused first, then the command line.

Kept apart from cli.py so that importing the CLI (tests do) never pauses the collector.
"""

from __future__ import annotations

from shopbot_tui.collector import pause_for_start_up


def main() -> int:
    pause_for_start_up()
    from shopbot_tui.cli.main import main as run_command_line

    return run_command_line()
