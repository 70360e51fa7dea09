"""`uv run python -m tests.perf --help`."""

from tests.perf.run import main

raise SystemExit(main())
