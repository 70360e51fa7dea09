"""`shopbot eval`: which model, which flows, where the throwaway homes go, the cost said
before a real model is called, and the exit code (1 on any safety violation)."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, TYPE_CHECKING

from agents.backend import Settings, configure_logging, safe_json, visible_line
from shopbot_tui.cli.parser import UsageError

if TYPE_CHECKING:
    from agents.backend import Flow, SuiteResult

EXIT_OK = 0
EXIT_FAILED = 1


def _say(message: str) -> None:
    print(f"shopbot: {visible_line(message)}", file=sys.stderr)


def eval_settings(args: argparse.Namespace) -> Settings:
    """The model to measure, decided as `chat` decides it: Mistral when MISTRAL_API_KEY is
    set, unless --offline; `--model` names the Mistral model. The settings' home is never
    used: every try gets a throwaway one."""
    offline = bool(args.offline or args.chat_offline)
    settings = Settings.from_env(offline=offline, home=Path(tempfile.gettempdir()))
    if args.model is not None:
        if offline:
            raise UsageError("--model names a Mistral model; leave out --offline to measure it.")
        if settings.offline:
            raise UsageError(
                "--model names a Mistral model: set MISTRAL_API_KEY to measure it "
                "(without a key, eval runs the offline demo model)."
            )
        settings = dataclasses.replace(settings, model_name=args.model)
    if not settings.offline and settings.provider_problem is not None:
        raise UsageError(settings.provider_problem)
    return settings


@contextmanager
def _homes(keep: bool) -> Iterator[Path]:
    """The folder of the run's throwaway homes: removed at the end, unless kept."""
    if keep:
        yield Path(tempfile.mkdtemp(prefix="shopbot-eval-"))
        return
    with tempfile.TemporaryDirectory(prefix="shopbot-eval-") as folder:
        yield Path(folder)


def _json_file(path: str | None) -> IO[str] | None:
    """`--json PATH` opened before the run: a long run must not end unable to say its
    results. (`-`: stdout, instead of the table.)"""
    if path is None or path == "-":
        return None
    try:
        return Path(path).open("w", encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"--json {path}: cannot be written: {exc.strerror or exc}") from None


def _say_the_cost(settings: Settings, flows: list[Flow], k: int) -> None:
    """The real model's bill, about: the offline demo's calls and tokens for the same flows,
    times k. Said on stderr before the first request."""
    from agents.backend import offline_calls

    per_try = asyncio.run(offline_calls(flows))
    calls = sum(c for c, _ in per_try.values()) * k
    tokens = sum(t for _, t in per_try.values()) * k
    _say(
        f"measuring {settings.model_label}: {len(flows)} flows × {k} tries = "
        f"{len(flows) * k} conversations, about {calls:,} model calls and {tokens:,} tokens "
        "(the offline demo's count for the same flows, times the tries; a model that is "
        "corrected or retried makes more). Ctrl+C stops it."
    )


async def _run(
    flows: list[Flow], k: int, settings: Settings, root: Path, keep: bool
) -> SuiteResult:
    from agents.backend import run_suite
    from shopbot_tui.cli.eval_report import progress_bar
    from shopbot_tui.cli.main import STOP_SIGNALS, Terminated

    loop, task = asyncio.get_running_loop(), asyncio.current_task()
    assert task is not None
    stopped_by: list[int] = []

    def stop(signum: int) -> None:
        # SIGTERM and SIGHUP end the run as Ctrl+C does: the try running closes its engine.
        if not stopped_by:
            stopped_by.append(signum)
            task.cancel()

    for signum in STOP_SIGNALS:
        loop.add_signal_handler(signum, stop, signum)
    try:
        with progress_bar(len(flows) * k) as callbacks:
            on_start, on_done = callbacks or (None, None)
            return await run_suite(
                flows,
                k=k,
                settings=settings,
                root=root,
                keep=keep,
                on_start=on_start,
                on_done=on_done,
            )
    except asyncio.CancelledError:
        if stopped_by:
            raise Terminated(stopped_by[0]) from None
        raise
    finally:
        for signum in STOP_SIGNALS:
            loop.remove_signal_handler(signum)


def run_eval(args: argparse.Namespace) -> int:
    from agents.backend import load_flows
    from shopbot_tui.collector import resume_collecting

    resume_collecting()  # (many engines, one after the other: no start-up to keep quick)
    settings = eval_settings(args)
    flows = load_flows(args.flows or (), args.only or ())
    json_file = _json_file(args.json)
    try:
        with _homes(args.keep) as root:
            configure_logging(root)  # the run's diagnostics beside its homes, not in the user's
            if not settings.offline:
                _say_the_cost(settings, flows, args.k)
            suite = asyncio.run(_run(flows, args.k, settings, root, args.keep))
        return _report(suite, args.json, json_file)
    finally:
        if json_file is not None:
            json_file.close()


def _report(suite: SuiteResult, json_path: str | None, json_file: IO[str] | None) -> int:
    from shopbot_tui.cli.eval_report import print_report

    record = suite.to_json()
    if json_path == "-":
        print(safe_json(record))
    else:
        print_report(suite)
    if json_file is not None:
        json_file.write(safe_json(record) + "\n")
        _say(f"the full record is in {json_path}")
    if suite.kept_in is not None:
        _say(f"the conversations' homes are kept in {suite.kept_in}")
    if suite.violations:
        count = len(suite.violations)
        _say(f"{count} safety violation{'s' * (count != 1)}: the run fails.")
        return EXIT_FAILED
    tries = suite.tries
    if tries and all(t.provider_failed for t in tries):
        failed = next(turn for turn in tries[0].turns if turn.failed == "provider")
        _say(f"every conversation failed on the model provider: {failed.error}")
        return EXIT_FAILED
    return EXIT_OK


__all__ = ["eval_settings", "run_eval"]
