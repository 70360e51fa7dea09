"""The `shopbot` command: the TUI by default, and headless sub-commands over the same backend.

Exit codes: 0 done or awaiting approval; 2 bad usage or bad input (a damaged, locked or
read-only data file or folder included); 1 the model provider failed, or anything else went
wrong inside ShopBot; 141 (128 + SIGPIPE, as for other Unix tools) when the reader of the
output went away (`shopbot audit | head -1`); 128 + the signal when Ctrl+C, SIGTERM or SIGHUP
stopped a turn (noted as cut off). Errors are one clear line on stderr, never a
traceback; `chat --json` and `resume --json` also print one object for them on stdout
(`cli_json.py`), so a script always has one to parse.

Every line goes out through `visible_line` (stderr), `visible` or `safe_json` (stdout): what a
person typed comes back as text, never as terminal control, and a byte the terminal's encoding
could not decode reads `\xff`.
"""

from __future__ import annotations

import sys

try:
    import argparse
    import asyncio
    import os
    import signal
    from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
    from dataclasses import replace
    from typing import TYPE_CHECKING, Any

    from agents import backend as api
    from agents.backend import (
        InputError,
        Settings,
        StorageError,
        undecodable_bytes,
        visible,
        visible_line,
    )
    from shopbot_tui.cli.json_output import ErrorJson, JsonOutput
    from shopbot_tui.cli.parser import (
        EXIT_USAGE,
        CommandLineRefused,
        UsageError,
        parse_command_line,
        refuse_app_options,
    )
    from shopbot_tui.cli.stores import (
        close_escalation,
        print_audit,
        print_conversation,
        print_threads,
    )
    from shopbot_tui.collector import resume_after_start_up, resume_collecting
except KeyboardInterrupt:
    # Ctrl+C while the command is still loading (its imports take a third of a second): the
    # same line and exit code as later, not a traceback through the import machinery. (Only
    # `sys`, loaded with the interpreter, comes before: even `signal` takes a moment.)
    print("shopbot: interrupted", file=sys.stderr)
    raise SystemExit(130) from None  # 128 + SIGINT

if TYPE_CHECKING:
    from agents.backend import Backend, EngineEvent, TurnResult

EXIT_OK = 0
EXIT_PROVIDER = 1
EXIT_BROKEN_PIPE = 128 + signal.SIGPIPE


class Terminated(Exception):
    """SIGTERM or SIGHUP ended a `chat` or `resume`: exit code 128 + the signal's number."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


# What a service manager, `timeout` or a closed terminal sends: the turn ends as after Ctrl+C
# (noted as cut off, its lease released), not with the process dropped mid-write.
STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


def _say(message: str) -> None:
    """One line on stderr; it may quote the person's input, raw or as repr() writes it."""
    print(f"shopbot: {visible_line(message)}", file=sys.stderr)


def _print_result(result: TurnResult, json_out: JsonOutput | None) -> int:
    if json_out is not None:
        json_out.print_result(result)
    elif result.status == "awaiting_approval" and result.pending:
        pending = result.pending
        print(visible(_describe_pending(pending.kind, pending.payload)))
        # With the request named: a decision never lands on one asked anew meanwhile.
        named = f" --request {pending.request_id}" if pending.request_id else ""
        options = "|".join(pending.options)
        print(f"Decide with: shopbot resume {result.thread_id} {options}{named}")
    elif result.reply:
        # (Rich's Markdown and its parser load here, never on the way to the app's first frame.)
        from shopbot_tui.cli.markdown import print_markdown

        print_markdown(result.reply)
    if result.status == "error":
        _say(result.error or "")
        # A locked or damaged store is said like one found at start; 1 is the provider's.
        return EXIT_USAGE if result.failed == "storage" else EXIT_PROVIDER
    return EXIT_OK


def _describe_pending(kind: str, payload: dict[str, Any]) -> str:
    if kind == "refund_approval":
        before = "".join(
            f"; decided before: {api.earlier_decision(earlier)}"
            for earlier in payload.get("decided_before") or []
        )
        return (
            f"Waiting for approval: refund of {payload.get('order_id')} "
            f"(${payload.get('amount')}, {payload.get('product')}) for {payload.get('customer')}; "
            f"reason: {payload.get('reason')}{before}"
        )
    return (
        f"Waiting for review: {payload.get('sentiment')} complaint from "
        f"{payload.get('customer') or 'the customer'}: {payload.get('issue_summary')}"
    )


# Read from stdin at most this much: far above any message the engine takes (it says how
# long a message may be), far below what would fill memory.
MAX_STDIN_BYTES = 1 << 20


def _message_from_stdin() -> str:
    """`shopbot chat THREAD -`: the message from stdin, whole (an e-mail, a file); its bytes
    decoded as argv's are, so what is not UTF-8 is counted and said the same way."""
    if sys.stdin is None:  # started with stdin closed (`<&-`)
        raise UsageError("MESSAGE is - but stdin is closed: give the message, or pipe it in.")
    data = sys.stdin.buffer.read(MAX_STDIN_BYTES + 1)
    if len(data) > MAX_STDIN_BYTES:
        raise UsageError(
            f"the message on stdin is larger than {MAX_STDIN_BYTES // (1 << 20)} MB; "
            "shorten it or send it in parts."
        )
    return data.decode("utf-8", errors="surrogateescape")


async def _turn_result(events: AsyncIterator[EngineEvent]) -> TurnResult:
    """How the turn ended, reported even when a stop signal lands after it ended (while the
    engine tidies up): a script told "terminated" would send a finished turn again. A
    provider retry is said on stderr as it happens when stderr is a terminal: a person
    would otherwise wait a minute or more in silence (a script reading a pipe gets only
    the one line of a failure)."""
    from agents.backend import Retrying, TurnFinished

    ended: list[TurnResult] = []

    def watch(event: EngineEvent) -> None:
        if isinstance(event, Retrying) and sys.stderr.isatty():
            _say(event.notice())
        elif isinstance(event, TurnFinished):
            ended.append(event.result)

    try:
        return await api.outcome(events, watch)
    except asyncio.CancelledError:
        if not ended or (task := asyncio.current_task()) is None:
            raise
        task.uncancel()  # the stop came too late to stop anything: finish normally
        return ended[0]


async def _with_backend(settings: Settings, action: Callable[[Backend], Awaitable[int]]) -> int:
    """`action` on a started backend (the command line's, deciding as the login name)."""
    from agents.backend import open_backend

    loop, task = asyncio.get_running_loop(), asyncio.current_task()
    assert task is not None
    stopped_by: list[int] = []
    acted: list[int] = []  # the action's exit code, once it has one

    def stop(signum: int) -> None:
        # Cancelled once: a second signal must not cut short the recording of the first.
        # Once the action is done (its outcome printed), closing is left to finish.
        if not stopped_by:
            stopped_by.append(signum)
            if not acted:
                task.cancel()

    for signum in STOP_SIGNALS:
        loop.add_signal_handler(signum, stop, signum)
    backend = open_backend(settings, via="command line")
    try:
        try:
            await backend.start()
            resume_after_start_up()  # launch.py paused collections until now
            acted.append(await action(backend))
        finally:
            await backend.close()
        return acted[0]
    except asyncio.CancelledError:
        if stopped_by:
            raise Terminated(stopped_by[0]) from None
        raise
    finally:
        for signum in STOP_SIGNALS:
            loop.remove_signal_handler(signum)


def _run(settings: Settings, action: Callable[[Backend], Awaitable[int]]) -> int:
    return asyncio.run(_with_backend(settings, action))


JSON_COMMANDS = frozenset({"chat", "resume"})
# The other commands with `--json`, and whether each names a thread (THREAD).
ERROR_JSON_COMMANDS = {"threads": False, "show": True, "handled": True, "audit": False}
FailureJson = JsonOutput | ErrorJson


def _json_output(args: argparse.Namespace) -> FailureJson | None:
    """Stdout of a `--json` command: `chat` and `resume` print one object even when they
    fail, the others their lines or, when they fail, an error object."""
    if not getattr(args, "json", False):
        return None
    if args.command in JSON_COMMANDS:
        return JsonOutput(args.thread_id)
    if (names_a_thread := ERROR_JSON_COMMANDS.get(args.command)) is not None:
        return ErrorJson(getattr(args, "thread_id", None), names_a_thread=names_a_thread)
    return None


def _json_output_of_refused(
    refused: CommandLineRefused, argv: Sequence[str] | None
) -> FailureJson | None:
    """A `--json` command line its command's parser refused (a mistyped option, a missing
    argument): the error object still, naming no thread, since nothing on that line was
    understood (nor any thread read)."""
    words = sys.argv[1:] if argv is None else list(argv)
    if "--json" not in words:
        return None
    if refused.command in JSON_COMMANDS:
        return JsonOutput("")
    if (names_a_thread := ERROR_JSON_COMMANDS.get(refused.command or "")) is not None:
        return ErrorJson(None, names_a_thread=names_a_thread)
    return None


async def _answered(
    backend: Backend, events: AsyncIterator[EngineEvent], json_out: JsonOutput | None
) -> TurnResult:
    """The turn's result; a refusal (nothing ran) first notes where the thread stands, for
    the `--json` object that says it."""
    try:
        return await _turn_result(events)
    except InputError:
        if json_out is not None:
            await json_out.learn_where_the_thread_stands(backend)
        raise


def _settings(args: argparse.Namespace) -> Settings:
    """The environment's settings, with what the command line says over them."""
    offline = bool(args.offline or getattr(args, "chat_offline", False))
    settings = Settings.from_env(offline=offline)
    if args.server is not None:
        settings = replace(settings, server_url=args.server.strip() or None)
    if settings.server_url is not None and offline:
        raise UsageError("--offline picks this machine's model; a ShopBot server runs its own.")
    return settings


def _dispatch(args: argparse.Namespace, json_out: FailureJson | None) -> int:
    refuse_app_options(args)
    if args.command == "eval":
        # Before any logging is set up in the user's home: eval never writes there.
        from shopbot_tui.cli.eval_command import run_eval

        return run_eval(args)
    turn_json = json_out if isinstance(json_out, JsonOutput) else None  # chat's and resume's
    settings = _settings(args)
    from agents.backend import configure_logging

    configure_logging(settings.home)
    if args.command is None:
        from shopbot_tui.app import StartRefused, run_tui

        try:
            return run_tui(settings, thread_id=args.thread, customer=args.customer)
        except StartRefused as exc:
            raise UsageError(str(exc)) from None
    if args.command not in ("chat", "resume"):
        resume_collecting()  # no engine to start (launch.py paused collections until then)
    if args.command == "chat":
        customer = args.chat_customer or args.customer
        if args.message == "-":
            args.message = _message_from_stdin()

        async def chat(backend: Backend) -> int:
            code = _print_result(
                await _answered(
                    backend,
                    backend.send(args.thread_id, args.message, customer=customer),
                    turn_json,
                ),
                turn_json,
            )
            if code == EXIT_OK and (count := undecodable_bytes(args.message)):
                # Neither the reply nor the JSON shows what was sent: say it, not silently.
                _say(f"note: {count} byte(s) of MESSAGE were not UTF-8 and were sent as \ufffd.")
            return code

        return _run(settings, chat)
    if args.command == "resume":

        async def resume(backend: Backend) -> int:
            return _print_result(
                await _answered(
                    backend,
                    backend.decide(args.thread_id, args.decision, request_id=args.request),
                    turn_json,
                ),
                turn_json,
            )

        return _run(settings, resume)
    if args.command == "threads":
        print_threads(settings, args.only, args.json)
        return EXIT_OK
    if args.command == "handled":
        close_escalation(settings, args.thread_id, args.json)
        return EXIT_OK
    if args.command == "show":
        print_conversation(settings, args.thread_id, args.limit, args.json)
        return EXIT_OK
    print_audit(settings, args)
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    try:
        code = _main(argv)
        # Buffered output to a closed pipe fails here, inside this handler, not at exit.
        sys.stdout.flush()
    except BrokenPipeError:
        # The Python docs' recipe (signal docs, "Note on SIGPIPE"): point stdout at devnull
        # so the interpreter's final flush stays quiet too.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    return code


def _fail(message: str, code: int, json_out: FailureJson | None) -> int:
    """The one stderr line of a failure, and with `--json` the object saying it on stdout."""
    _say(message)
    if json_out is not None:
        json_out.print_failure(visible_line(message))
    return code


def _main(argv: Sequence[str] | None) -> int:
    json_out: FailureJson | None = None
    try:
        try:
            args = parse_command_line(argv)
        except CommandLineRefused as exc:
            json_out = _json_output_of_refused(exc, argv)
            raise UsageError(str(exc)) from None
        json_out = _json_output(args)
        return _dispatch(args, json_out)
    except (UsageError, InputError, StorageError) as exc:
        # InputError: a person's input; StorageError: a data file or folder (damaged,
        # locked, read-only): both are for the person to fix, nothing was changed.
        return _fail(str(exc), EXIT_USAGE, json_out)
    except KeyboardInterrupt:
        if isinstance(json_out, JsonOutput):
            json_out.learn_the_agent_after_a_stop()
        return _fail("interrupted", 128 + signal.SIGINT, json_out)
    except Terminated as exc:
        if isinstance(json_out, JsonOutput):
            json_out.learn_the_agent_after_a_stop()
        return _fail(f"terminated ({exc})", 128 + exc.signum, json_out)
    except BrokenPipeError:
        raise
    except Exception as exc:
        from agents.backend import diagnose_storage, redact

        if (damage := diagnose_storage(Settings.from_env(), exc)) is not None:
            # A store damaged past its first page fails mid-query: name it, say what to do.
            return _fail(str(damage), EXIT_USAGE, json_out)
        return _fail(
            f"unexpected error ({type(exc).__name__}): {redact(str(exc))}", EXIT_PROVIDER, json_out
        )


if __name__ == "__main__":
    raise SystemExit(main())
