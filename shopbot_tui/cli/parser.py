"""The `shopbot` command line's grammar: sub-commands, options and what each accepts.

A mistake in it is one line on stderr and exit code 2, never argparse's usage dump.
"""

from __future__ import annotations

import argparse
import difflib
import sys
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, NoReturn

from agents import backend as api
from agents.backend import MAX_ERROR_CHARS, quoted, validate_thread_id, visible_line

EXIT_USAGE = 2


class UsageError(Exception):
    """Bad usage or bad input: exit code 2."""


class CommandLineRefused(Exception):
    """The parser refused the command line (exit code 2); the message is safe to print.
    `command`: the sub-command whose parser refused it (None: the top level's)."""

    def __init__(self, message: str, command: str | None) -> None:
        super().__init__(message)
        self.command = command


class _Parser(argparse.ArgumentParser):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # No abbreviations: `--js` read as --json, and a script using one would break the day
        # another option begins the same way.
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        # One line, not argparse's usage dump; argparse quotes arguments raw ("unrecognized
        # arguments: ...") or with repr(), so the line goes through `visible_line` too, and
        # whole (a 10 KB argument): cut to what a person reads.
        # (Cut once made visible: a control character shows as several.)
        message = visible_line(message)
        if len(message) > MAX_ERROR_CHARS:
            message = f"{message[:MAX_ERROR_CHARS]}…"
        # A sub-command's own mistake points at its own help (`shopbot resume --help`), where
        # its arguments are; the top-level help lists only the sub-commands. Raised, not
        # exited: `chat --json` prints its error object for this refusal too.
        command = self.prog.split()[1] if " " in self.prog else None
        raise CommandLineRefused(f"{message} (see `{self.prog} --help`)", command)

    def refuse_extras(self, extras: list[str]) -> NoReturn:
        """What argparse calls "unrecognized arguments", said by the parser they were given
        to (its help lists what it takes), with the likely option when one was mistyped."""
        options = [name for action in self._actions for name in action.option_strings]
        mistyped = (w.split("=", 1)[0] for w in extras if w.startswith("--"))
        close = next((m for w in mistyped if (m := difflib.get_close_matches(w, options, 1))), [])
        hint = f" (did you mean {close[0]}?)" if close else ""
        self.error(f"unrecognized arguments: {' '.join(extras)}{hint}")

    def refuse_misplaced(self, option: str) -> NoReturn:
        """`shopbot --json chat ...`: an option of the sub-command typed before it."""
        self.error(f"{option} goes after the command: `{self.prog} ... {option}`")

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        # A mistyped sub-command read "argument command: invalid choice: 'chta' (choose from
        # 'chat', ...)": argparse's words. Say it is an unknown command, and the likely one.
        if isinstance(action, argparse._SubParsersAction) and value not in action.choices:
            commands = list(action.choices)
            close = difflib.get_close_matches(str(value), commands, n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            raise argparse.ArgumentError(
                None,
                f"unknown command {quoted(value)}{hint}; commands: {', '.join(commands)}",
            )
        super()._check_value(action, value)


def _audit_limit(text: str) -> int:
    try:
        limit = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {quoted(text)}") from None
    most = api.MAX_AUDIT_PAGE  # (the audit log loads on first use: not for `shopbot`)
    if not 1 <= limit <= most:
        raise argparse.ArgumentTypeError(f"must be between 1 and {most:,}, got {limit}")
    return limit


def _moment(text: str) -> str:
    """An ISO-8601 date or time (`2026-11-30`, `2026-11-30T09:30`, `...Z`, `...+02:00`)."""
    try:
        datetime.fromisoformat(text.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"not an ISO-8601 date or time: {quoted(text)} (e.g. 2026-11-30 or 2026-11-30T09:30)"
        ) from None
    return text.strip()


def _customer(text: str) -> str:
    """A name, given: a blank one (a script's unset variable) would run the conversation with
    no customer, and the ownership gate would check no order against anyone."""
    if not text.strip():
        raise argparse.ArgumentTypeError(
            "is blank: give the customer's name, or leave --customer out for no customer"
        )
    return text


def _thread_id(text: str) -> str:
    try:
        return validate_thread_id(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def parse_command_line(argv: Sequence[str] | None) -> argparse.Namespace:
    """`argv` parsed; a refusal raises CommandLineRefused. Arguments nothing took are refused
    by the sub-command they followed: argparse's top-level parser reported them, pointing at
    `shopbot --help`, which does not list a sub-command's options."""
    parser = build_parser()
    words = sys.argv[1:] if argv is None else list(argv)
    args, extras = parser.parse_known_args(words)
    if extras:
        commands = next(
            a for a in parser._actions if isinstance(a, argparse._SubParsersAction)
        ).choices
        refusing = commands.get(args.command, parser) if args.command else parser
        assert isinstance(refusing, _Parser)
        if refusing is not parser:
            before = words[: words.index(args.command)]
            taken = {name for action in refusing._actions for name in action.option_strings}
            for word in extras:
                if word in before and word.split("=", 1)[0] in taken:
                    refusing.refuse_misplaced(word.split("=", 1)[0])
        refusing.refuse_extras(extras)
    return args


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="shopbot",
        description="ShopBot: a safe customer-support assistant for an online shop.",
    )
    parser.add_argument("--thread", metavar="ID", help="open this conversation (TUI)")
    parser.add_argument(
        "--customer",
        type=_customer,
        metavar="NAME",
        help="who the customer is (used by the ownership gate)",
    )
    parser.add_argument(
        "--offline", action="store_true", help="use the offline demo model (no network)"
    )
    parser.add_argument(
        "--server",
        metavar="URL",
        help="work with this ShopBot server (SHOPBOT_SERVER_URL; the token: SHOPBOT_SERVER_TOKEN)",
    )
    commands = parser.add_subparsers(dest="command", parser_class=_Parser)

    # `metavar`s and a help line for every argument: `shopbot chat --help` showed
    # "--customer CHAT_CUSTOMER" (the `dest`) and an --offline that said nothing.
    offline_help = "use the offline demo model even when MISTRAL_API_KEY is set"
    chat = commands.add_parser("chat", help="send one message, headless")
    chat.add_argument(
        "thread_id", metavar="THREAD", help="the conversation: an existing one, or a new id"
    )
    chat.add_argument("message", metavar="MESSAGE", help="the message; - reads it from stdin")
    chat.add_argument(
        "--customer",
        dest="chat_customer",
        type=_customer,
        metavar="NAME",
        help="who the customer is (used by the ownership gate)",
    )
    chat.add_argument("--json", action="store_true", help="print one JSON object")
    chat.add_argument("--offline", dest="chat_offline", action="store_true", help=offline_help)

    resume = commands.add_parser("resume", help="answer a pending approval")
    resume.add_argument("thread_id", metavar="THREAD", help="the conversation waiting")
    resume.add_argument(
        "decision",
        metavar="DECISION",
        help="refunds: approve, reject, escalate; complaints: escalate_to_senior, "
        "provide_compensation, close_ticket",
    )
    resume.add_argument(
        "--request",
        metavar="ID",
        help="decide only if the request waiting is this one (its request_id)",
    )
    resume.add_argument("--json", action="store_true", help="print one JSON object")
    resume.add_argument("--offline", dest="chat_offline", action="store_true", help=offline_help)

    threads = commands.add_parser("threads", help="list conversations")
    threads.add_argument(
        "--only",
        choices=("waiting", "escalated"),
        help="only those waiting for a decision, or escalated to a person (oldest first)",
    )
    threads.add_argument("--json", action="store_true", help="one JSON object per line")

    show = commands.add_parser("show", help="print a conversation, as the app shows it")
    show.add_argument("thread_id", metavar="THREAD", type=_thread_id, help="the conversation")
    show.add_argument(
        "--limit",
        metavar="N",
        type=_audit_limit,
        help="only its last N lines (messages, replies and notes)",
    )
    show.add_argument("--json", action="store_true", help="one JSON object per line")

    handled = commands.add_parser(
        "handled", help="mark a conversation's escalation handled, in your name"
    )
    handled.add_argument(
        "thread_id", metavar="THREAD", type=_thread_id, help="the escalated conversation"
    )
    handled.add_argument("--json", action="store_true", help="print the escalation closed")

    audit = commands.add_parser("audit", help="read the audit log, newest first")
    audit.add_argument(
        "--thread",
        dest="audit_thread",
        metavar="ID",
        type=_thread_id,
        help="only this conversation",
    )
    audit.add_argument("--kind", help="only this kind of event")
    audit.add_argument(
        "--since",
        metavar="WHEN",
        type=_moment,
        help="only events from this date or time on (UTC if no zone)",
    )
    audit.add_argument(
        "--until",
        metavar="WHEN",
        type=_moment,
        help="only events before this date or time (UTC if no zone)",
    )
    audit.add_argument(
        "--text",
        metavar="TEXT",
        help='only events showing every word of TEXT (key=value as printed, "a phrase")',
    )
    audit.add_argument(
        "--limit",
        metavar="N",
        type=_audit_limit,
        default=100,
        help="at most this many (default 100)",
    )
    audit.add_argument("--json", action="store_true", help="one JSON object per line")

    evaluate = commands.add_parser(
        "eval", help="scripted customers against the model: pass^k per flow, safety checked"
    )
    evaluate.add_argument(
        "--model",
        metavar="NAME",
        type=_model_name,
        help="the Mistral model to measure (default SHOPBOT_MODEL; needs MISTRAL_API_KEY)",
    )
    evaluate.add_argument(
        "--k",
        metavar="N",
        type=_tries,
        default=4,
        help=f"tries of each flow, pass^1 to pass^N (default 4, at most {MAX_TRIES})",
    )
    evaluate.add_argument(
        "--only",
        metavar="FLOW",
        nargs="+",
        action="extend",
        help="only these flows (by name)",
    )
    evaluate.add_argument(
        "--flows",
        metavar="DIR",
        action="append",
        type=Path,
        help="also the flows in this folder's *.toml files",
    )
    evaluate.add_argument(
        "--json", metavar="PATH", help="write the full record to PATH as JSON (- : stdout)"
    )
    evaluate.add_argument(
        "--keep",
        action="store_true",
        help="keep each conversation's throwaway home, and say where",
    )
    evaluate.add_argument("--offline", dest="chat_offline", action="store_true", help=offline_help)
    return parser


# Tries per flow at most: 100 is already a long run against a real model.
MAX_TRIES = 100


def _tries(text: str) -> int:
    try:
        tries = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {quoted(text)}") from None
    if not 1 <= tries <= MAX_TRIES:
        raise argparse.ArgumentTypeError(f"must be between 1 and {MAX_TRIES}, got {tries}")
    return tries


def _model_name(text: str) -> str:
    name = text.strip()
    if not name or not name.isprintable():
        raise argparse.ArgumentTypeError("give a model name, e.g. mistral-small-latest")
    return name


# The app's own options, refused beside any sub-command (only `chat` takes a customer): one
# that would silently ignore them misleads (`shopbot --thread t1 chat t2 hi` wrote to t2).
# What to do instead, where there is more to say than the command's --help.
APP_OPTIONS_INSTEAD = {
    "thread": {
        "chat": "`shopbot chat THREAD MESSAGE` names the conversation as THREAD",
        "resume": "`shopbot resume THREAD DECISION` names the conversation as THREAD",
        "show": "`shopbot show THREAD` names the conversation as THREAD",
        "handled": "`shopbot handled THREAD` names the conversation as THREAD",
        "audit": "for one conversation's events: `shopbot audit --thread ID`",
        "threads": "`shopbot threads` lists every conversation",
        "eval": "each flow runs in conversations of its own, in throwaway homes",
    },
    "customer": {
        "resume": "the customer is the one the conversation started with",
        "audit": "`shopbot audit --text NAME` finds a customer's events",
        "threads": "`shopbot threads` lists every conversation with its customer",
        "handled": "the escalation is closed in your name, whoever the customer",
        "eval": "each flow names its own customer",
    },
}


def refuse_app_options(args: argparse.Namespace) -> None:
    if args.command is None:
        return
    if args.command == "eval" and args.server is not None:
        raise UsageError(
            "`shopbot eval` runs its flows in throwaway homes of its own, never on a server "
            "(they would pay refunds from its ledger): leave --server out."
        )
    given = (args.customer, getattr(args, "chat_customer", None))
    if args.command == "chat":
        if None not in given and not _same_name(*given):
            raise UsageError(
                f"two customers: --customer {quoted(given[0])} before the command and "
                f"{quoted(given[1])} after it; give one."
            )
        given = (None, None)  # `shopbot --customer NAME chat ...`: the chat's customer
    for option, value in (("thread", args.thread), ("customer", given[0])):
        if value is not None:
            instead = APP_OPTIONS_INSTEAD[option].get(
                args.command, f"`shopbot {args.command} --help` says what it takes"
            )
            raise UsageError(
                f"--{option} before the command is the app's option, not "
                f"`{args.command}`'s: {instead}."
            )


def _same_name(a: str | None, b: str | None) -> bool:
    """Names as the ownership gate compares them: case and spacing aside."""
    return " ".join(str(a).split()).casefold() == " ".join(str(b).split()).casefold()
