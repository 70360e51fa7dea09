"""The benchmark suite runs (quick mode) and produces every row. Timings are not asserted:
they belong to `uv run python -m tests.perf`, on a quiet machine, not to the test run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.perf.run import EXPECTED_KEYS, SECTION_NAMES, main
from tests.support.backends import REQUIRED
from tests.support.postgres_cluster import server_binaries

# The PostgreSQL section starts a cluster and plays the conversation three times over: it
# runs in the postgres group (`pytest -m postgres`), the rest in the README's command.
WITHOUT_POSTGRES = ",".join(name for name in SECTION_NAMES if name != "postgres")


@pytest.mark.benchmarks
def test_quick_benchmark_produces_every_row(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MISTRAL_API_KEY", raising=False)
    out = tmp_path / "perf.json"
    assert main(["--quick", "--quiet", "--json", str(out), "--only", WITHOUT_POSTGRES]) == 0
    printed = capsys.readouterr().out
    assert "| section | metric | target | measured | result |" in printed
    payload = json.loads(out.read_text(encoding="utf-8"))
    rows = {row["key"]: row for row in payload["rows"]}
    for section, keys in EXPECTED_KEYS.items():
        if section == "postgres":
            continue
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


@pytest.mark.postgres
def test_quick_benchmark_measures_postgres_beside_sqlite(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MISTRAL_API_KEY", raising=False)
    monkeypatch.delenv("SHOPBOT_DATABASE_URL", raising=False)
    out = tmp_path / "perf.json"
    assert main(["--quick", "--quiet", "--json", str(out), "--only", "postgres"]) == 0
    capsys.readouterr()
    rows = {row["key"]: row for row in json.loads(out.read_text(encoding="utf-8"))["rows"]}
    assert set(rows) == set(EXPECTED_KEYS["postgres"])
    if server_binaries() is None and not REQUIRED:
        # Said in the table instead of a figure, as the benchmark's reader sees it.
        assert all("not installed" in row["note"] for row in rows.values())
        pytest.skip("PostgreSQL's server programs are not installed: apt-get install postgresql")
    for key, row in rows.items():
        assert row["measured"] is not None, f"{key}: {row['note']}"
    assert rows["postgres.ratio"]["target"] == 1.5
    assert rows["postgres.ratio"]["measured"] == pytest.approx(
        rows["postgres.overhead"]["measured"] / rows["postgres.sqlite_overhead"]["measured"]
    )
