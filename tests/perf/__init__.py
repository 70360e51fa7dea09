"""The benchmark suite (issue 5): `uv run python -m tests.perf`; see tests/perf/run.py."""

# Before any benchmark imports Textual: the app sets Textual's frame rate on import, and the
# benchmarks measure the app as `shopbot` runs it.
import shopbot_tui  # noqa: F401
