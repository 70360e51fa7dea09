"""The benchmark suite runs (quick mode) and produces every row. Timings are not asserted:
they belong to `uv run python -m tests.perf`, on a quiet machine, not to the test run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.perf.run import EXPECTED_KEYS, main


def test_quick_benchmark_produces_every_row(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MISTRAL_API_KEY", raising=False)
    out = tmp_path / "perf.json"
    assert main(["--quick", "--quiet", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "| section | metric | target | measured | result |" in printed
    payload = json.loads(out.read_text(encoding="utf-8"))
    rows = {row["key"]: row for row in payload["rows"]}
    for section, keys in EXPECTED_KEYS.items():
        for key in keys:
            assert key in rows, f"{section}: row {key} missing"
            assert rows[key]["measured"] is not None, f"{key}: {rows[key]['note']}"
    # Model-call counts are deterministic, so they are checked exactly: ours, the previous
    # design (an extraction call before the tool runs) and the reference supervisor.
    order_status = rows["calls.order_status_sequential"]
    assert order_status["measured"] == 2
    assert order_status["extra"] == {"ours": 2, "previous": 3, "supervisor": 5}
    assert rows["calls.greeting_sequential"]["extra"] == {"ours": 1, "previous": 1, "supervisor": 3}
    assert rows["calls.suite_total"]["extra"] == {"ours": 19, "previous": 25, "supervisor": 34}
