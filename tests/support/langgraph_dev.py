"""`langgraph dev` serving this checkout's `langgraph.json`, on a free port, for tests.

The server runs in its own temporary folder (it keeps its threads there, `.langgraph_api`),
with its own ShopBot home and no Mistral key (the offline demo model), and is stopped with
its whole process group.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[2]
START_TIMEOUT = 120.0  # seconds: ~15 s on an idle machine, several times that on a busy one


@dataclass
class Served:
    url: str
    home: Path
    log: Path
    process: subprocess.Popen[bytes]

    def log_tail(self, chars: int = 6000) -> str:
        return self.log.read_text(errors="replace")[-chars:]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def config_for(folder: Path) -> Path:
    """The checkout's `langgraph.json`, its `./` paths made absolute (the server reads them
    from its working folder, which is `folder`)."""
    config = json.loads((REPO / "langgraph.json").read_text())

    def absolute(spec: str) -> str:
        return str(REPO / spec[2:]) if spec.startswith("./") else spec

    config["dependencies"] = [
        str(REPO) if d == "." else absolute(d) for d in config["dependencies"]
    ]
    config["graphs"] = {name: absolute(spec) for name, spec in config["graphs"].items()}
    config["auth"]["path"] = absolute(config["auth"]["path"])
    if "http" in config:
        config["http"]["app"] = absolute(config["http"]["app"])
    path = folder / "langgraph.json"
    path.write_text(json.dumps(config))
    return path


def start(
    folder: Path,
    *,
    tokens: str,
    reviewers: str | None = None,
    environ: dict[str, str] | None = None,
) -> Served:
    """`reviewers`: the home's reviewers.toml, if it has one; `environ`: more variables."""
    home = folder / "home"
    if reviewers is not None:
        home.mkdir(parents=True, exist_ok=True)
        (home / "reviewers.toml").write_text(reviewers, encoding="utf-8")
    port = free_port()
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("MISTRAL_", "LANGSMITH_", "LANGCHAIN_", "SHOPBOT_"))
    }
    env |= {
        "LANGGRAPH_CLI_NO_ANALYTICS": "1",
        "LANGGRAPH_NO_VERSION_CHECK": "true",
        "LANGSMITH_TRACING": "false",
        "SHOPBOT_HOME": str(home),
        "SHOPBOT_OPERATOR_TOKENS": tokens,
        **(environ or {}),
    }
    config_for(folder)
    log = folder / "server.log"
    command = shutil.which("langgraph", path=str(Path(sys.executable).parent))
    assert command, "langgraph-cli is a dev dependency: `uv sync` installs it"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [
                command,
                "dev",
                "--port",
                str(port),
                "--host",
                "127.0.0.1",
                "--no-browser",
                "--no-reload",
            ],
            cwd=folder,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    served = Served(f"http://127.0.0.1:{port}", home, log, process)
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"langgraph dev exited ({process.returncode}):\n{served.log_tail()}")
        try:
            if httpx.get(f"{served.url}/ok", timeout=2).status_code == 200:
                return served
        except httpx.HTTPError:
            pass
        time.sleep(0.25)  # (waiting for a process to listen: there is nothing to await)
    stop(served)
    raise RuntimeError(
        f"langgraph dev did not answer within {START_TIMEOUT:.0f} s:\n{served.log_tail()}"
    )


def stop(served: Served) -> None:
    """SIGTERM to the server's process group (uvicorn, its workers), SIGKILL if it lingers."""
    if served.process.poll() is not None:
        return
    try:
        os.killpg(served.process.pid, signal.SIGTERM)
        served.process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        os.killpg(served.process.pid, signal.SIGKILL)
        served.process.wait(timeout=5)
    except ProcessLookupError:
        pass
