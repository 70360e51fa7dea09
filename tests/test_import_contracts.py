"""The import contracts of pyproject.toml (`lint-imports`, run by .ci/run) hold for the code
as it is, and break on the imports they forbid: each is run on a copy of the packages with
one deliberate bad import added."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("gates", "agents", "shopbot_tui")
CONTRACTS = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"][
    "importlinter"
]["contracts"]


def lint_imports(where: Path) -> subprocess.CompletedProcess[str]:
    """`lint-imports` on the packages copied to `where`, with the project's contracts."""
    lint = Path(sys.executable).with_name("lint-imports")
    # Only the copy on the path: not the project's own packages (its editable install).
    env = {**os.environ, "PYTHONPATH": str(where), "PYTHONSAFEPATH": "1"}
    return subprocess.run(
        [str(lint), str(where / "pyproject.toml"), "--no-cache"],
        cwd=where,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.fixture(scope="module")
def copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = tmp_path_factory.mktemp("contracts")
    for package in PACKAGES:
        shutil.copytree(
            ROOT / package, where / package, ignore=shutil.ignore_patterns("__pycache__")
        )
    shutil.copy(ROOT / "pyproject.toml", where / "pyproject.toml")
    return where


def test_the_code_keeps_every_contract(copy: Path) -> None:
    done = lint_imports(copy)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"Contracts: {len(CONTRACTS)} kept, 0 broken." in done.stdout


@pytest.mark.parametrize(
    ("module", "bad_import", "contract"),
    [
        ("gates/rules.py", "import langgraph", "gates imports nothing of ours and no framework"),
        ("gates/rules.py", "import agents.names", "gates imports nothing of ours and no framework"),
        ("agents/names.py", "import textual", "agents never imports the UI"),
        ("agents/settings.py", "import shopbot_tui.toasts", "agents never imports the UI"),
        (
            "shopbot_tui/toasts.py",
            "from agents.store.threads import ThreadRegistry",
            "the fronts use agents only through agents.backend",
        ),
        (
            "shopbot_tui/toasts.py",
            "import agents.runner.engine",
            "the fronts use agents only through agents.backend",
        ),
        (
            "shopbot_tui/chat/drafts.py",
            "from shopbot_tui.chat.screen import ChatScreen",
            "the chat's helpers never import the chat screen",
        ),
    ],
)
def test_a_contract_breaks_on_the_import_it_forbids(
    tmp_path: Path, copy: Path, module: str, bad_import: str, contract: str
) -> None:
    where = tmp_path / "copy"
    shutil.copytree(copy, where)
    target = where / module
    target.write_text(
        target.read_text(encoding="utf-8") + f"\n{bad_import}  # noqa\n", encoding="utf-8"
    )
    done = lint_imports(where)
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"{contract} BROKEN" in done.stdout
    assert " 0 broken." not in done.stdout


def test_every_part_of_agents_but_its_interface_is_protected() -> None:
    """A new part of agents is out of the fronts' reach until it is named in the contract."""
    (protected,) = [c for c in CONTRACTS if c["type"] == "protected"]
    parts = {
        f"agents.{path.stem if path.is_file() else path.name}"
        for path in (ROOT / "agents").iterdir()
        if (path.suffix == ".py" and path.stem != "__init__")
        or (path.is_dir() and (path / "__init__.py").exists())
    }
    assert parts - {"agents.backend"} == set(protected["protected_modules"])


def test_every_helper_of_the_chat_is_kept_from_importing_its_screen() -> None:
    (helpers,) = [c for c in CONTRACTS if c["name"].startswith("the chat's helpers")]
    modules = {
        f"shopbot_tui.chat.{path.stem}"
        for path in (ROOT / "shopbot_tui" / "chat").glob("*.py")
        if path.stem not in ("__init__", "screen")
    }
    assert modules == set(helpers["source_modules"])
