"""The app in a real pseudo-terminal, driven by bytes as a terminal sends them (a paste, a
key), through Textual's own driver: what `run_test`'s headless driver never parses.

`python -m tests.support.terminal HOME THREAD CUSTOMER` runs the app (offline demo model) and
writes HOME/ready once the conversation can take a message.
"""

from __future__ import annotations

import fcntl
import os
import struct
import subprocess
import sys
import termios
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
READY = "ready"


class Terminal:
    """The terminal side of a running app: `type` sends it bytes."""

    def __init__(self, master: int, process: subprocess.Popen[bytes]) -> None:
        self._master = master
        self.process = process

    def type(self, data: str) -> None:
        os.write(self._master, data.encode("utf-8"))


def wait_for(condition: Callable[[], bool], what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


@contextmanager
def app_in_terminal(
    home: Path, *, thread_id: str, customer: str, size: tuple[int, int] = (80, 24)
) -> Iterator[Terminal]:
    """The app running in a pseudo-terminal of `size`, ready for a message; quit on exit."""
    master, slave = os.openpty()
    columns, rows = size
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
    env = {**os.environ, "TERM": "xterm-256color", "PYTHONPATH": str(ROOT)}
    for name in [n for n in env if n.startswith(("MISTRAL_", "TEXTUAL_"))]:
        del env[name]
    with (home / "stderr.txt").open("wb") as errors:
        process = subprocess.Popen(
            [sys.executable, "-m", "tests.support.terminal", str(home), thread_id, customer],
            stdin=slave,
            stdout=slave,
            stderr=errors,
            cwd=ROOT,
            env=env,
            start_new_session=True,
        )
    os.close(slave)
    # What the app draws is read and dropped: a full pty buffer would stop it mid-frame.
    drain = threading.Thread(target=_drain, args=(master,), daemon=True)
    drain.start()
    terminal = Terminal(master, process)
    try:
        wait_for(
            lambda: (home / READY).exists() or process.poll() is not None, "the app to be ready"
        )
        assert process.poll() is None, (home / "stderr.txt").read_text()
        yield terminal
    finally:
        if process.poll() is None:
            terminal.type("\x11")  # ctrl+q
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        os.close(master)


def _drain(master: int) -> None:
    try:
        while os.read(master, 65536):
            pass
    except OSError:
        pass  # the app has quit


def _run_app(home: Path, thread_id: str, customer: str) -> None:
    from agents.backend.local import LocalBackend
    from agents.models.offline.demo_model import OfflineDemoModel
    from agents.runner.engine import ShopBotEngine
    from agents.settings import Settings
    from shopbot_tui.app import ShopBotApp

    settings = Settings(home=home, force_offline=True)

    class AppSayingReady(ShopBotApp):
        def on_mount(self) -> None:
            super().on_mount()
            self.set_interval(0.05, self._say_ready)

        def _say_ready(self) -> None:
            if self.chat.thread_ready and not (home / READY).exists():
                (home / READY).write_text("", encoding="utf-8")

    app = AppSayingReady(
        settings,
        thread_id=thread_id,
        customer=customer,
        backend_factory=lambda: LocalBackend(
            settings,
            via="app",
            engine_factory=lambda: ShopBotEngine(settings, model=OfflineDemoModel()),
        ),
    )
    app.run()


if __name__ == "__main__":
    _run_app(Path(sys.argv[1]), sys.argv[2], sys.argv[3])
