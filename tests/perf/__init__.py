"""The benchmark suite (issue 5): `uv run python -m tests.perf`; see tests/perf/run.py."""
