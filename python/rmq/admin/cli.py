"""Command line of the ``rmq`` admin tool: parse, run one sub-command, print, exit.

Exit status: 0 done, 1 the cluster said no or could not be reached (one line on stderr that
says what happened and what to check), 2 a usage error (argparse). Expected failures never
print a traceback. ``-n`` and ``--json`` are accepted before or after the sub-command name,
since mqadmin users write ``mqadmin topicList -n host:9876``.
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import re
import sys
import typing
from collections.abc import Sequence
from typing import TextIO

from rmq.admin.client import DEFAULT_NAMESRV_ADDR, DEFAULT_TIMEOUT_MS, Admin
from rmq.admin.command import MQADMIN_COMMANDS, REGISTRY
from rmq.admin.output import Result
from rmq.errors import RmqError
from rmq.tls import TlsOptions, add_tls_arguments

__all__ = ["build_parser", "main"]

PROG = "rmq"


def _global_options(parser: argparse.ArgumentParser, *, suppress: bool) -> None:
    default_addr = os.environ.get("NAMESRV_ADDR") or DEFAULT_NAMESRV_ADDR

    def d(value: object) -> object:
        return argparse.SUPPRESS if suppress else value

    parser.add_argument(
        "-n",
        "--namesrvAddr",
        dest="namesrv_addr",
        metavar="ADDR",
        default=d(default_addr),
        help="nameserver address list, host:port;host:port (default: $NAMESRV_ADDR, else "
        f"{DEFAULT_NAMESRV_ADDR})",
    )
    parser.add_argument(
        "--json",
        action="store_true",
        default=d(False),
        help="print one JSON document instead of tables",
    )
    parser.add_argument(
        "--access-key",
        dest="access_key",
        metavar="AK",
        default=d(None),
        help="ACL account to sign every request with (default: $RMQ_ACCESS_KEY); needed when "
        "the brokers run with aclEnable=true",
    )
    parser.add_argument(
        "--secret-key",
        dest="secret_key",
        metavar="SK",
        default=d(None),
        help="the account's secret key (default: $RMQ_SECRET_KEY, which keeps it out of the "
        "process list and shell history; never printed)",
    )
    parser.add_argument(
        "--timeout",
        type=_timeout,
        metavar="MS",
        default=d(DEFAULT_TIMEOUT_MS),
        help=f"timeout of each request in milliseconds (default: {DEFAULT_TIMEOUT_MS})",
    )
    add_tls_arguments(parser, suppress=suppress)


def unknown_command_hint(name: str) -> str:
    """What to tell a user who typed sub-command ``name``, which rmq does not have: the
    command they probably meant (case-insensitively, then by spelling), or that it is one of
    mqadmin's that rmq lacks."""
    by_case = [c for c in REGISTRY if c.lower() == name.lower()]
    if by_case:
        return f"unknown command {name!r}: did you mean {by_case[0]!r}? (names are case-sensitive)"
    lowered = {c.lower(): c for c in REGISTRY}
    close = difflib.get_close_matches(name.lower(), list(lowered), n=3, cutoff=0.7)
    if close:
        names = " or ".join(repr(lowered[c]) for c in close)
        return f"unknown command {name!r}: did you mean {names}?"
    if name in MQADMIN_COMMANDS:
        return (
            f"{name!r} is an mqadmin command that rmq's admin tool does not have yet (run "
            "'rmq --help' for the ones it has)"
        )
    return f"unknown command {name!r}: run 'rmq --help' for the list"


class _Parser(argparse.ArgumentParser):
    """argparse, but an unknown sub-command gets :func:`unknown_command_hint` instead of the
    list of every choice."""

    def error(self, message: str) -> typing.NoReturn:
        bad = re.match(r"argument COMMAND: invalid choice: '?([^' ]+)'?", message)
        if bad:
            self.print_usage(sys.stderr)
            self.exit(2, f"{self.prog}: error: {unknown_command_hint(bad.group(1))}\n")
        super().error(message)


def build_parser() -> argparse.ArgumentParser:
    import rmq.admin.commands  # noqa: F401  (registers the sub-commands)

    parser = _Parser(
        prog=PROG,
        description="Administer an rmq (or RocketMQ) cluster: mqadmin's sub-commands and flags.",
        epilog="Run 'rmq COMMAND -h' for the options of one command.",
    )
    _global_options(parser, suppress=False)
    subs = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for command in REGISTRY.values():
        sub = subs.add_parser(command.name, help=command.summary, description=command.summary)
        command.configure(sub)
        _global_options(sub, suppress=True)
        sub.set_defaults(run=command.run)
    return parser


def _print(result: Result, as_json: bool, out: TextIO, command: str) -> None:
    if as_json:
        json.dump(result.data, out, indent=2, ensure_ascii=False)
        out.write("\n")
    else:
        for line in result.lines:
            out.write(line + "\n")
    out.flush()
    # After the output: lines may be produced while printing, and add warnings as they go.
    for warning in result.warnings:
        print(f"{PROG} {command}: warning: {warning}", file=sys.stderr)


def _timeout(value: str) -> int:
    try:
        ms = int(value)
    except ValueError:
        ms = 0
    if ms <= 0:
        raise argparse.ArgumentTypeError(
            f"expected a positive number of milliseconds, not {value!r}"
        )
    return ms


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``rmq`` console script. Returns the exit status."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help (0) and usage errors (2)
        return exc.code if isinstance(exc.code, int) else 2
    command: str = args.command
    try:
        with Admin(
            args.namesrv_addr,
            args.timeout,
            access_key=args.access_key or os.environ.get("RMQ_ACCESS_KEY") or None,
            secret_key=args.secret_key or os.environ.get("RMQ_SECRET_KEY") or None,
            tls=TlsOptions.from_args(args),
        ) as admin:
            result = args.run(admin, args)
            _print(result, args.json, sys.stdout, command)
    except RmqError as exc:
        message = " ".join(str(exc).split("\n")).strip() or type(exc).__name__
        print(f"{PROG} {command}: {message}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        # The reader went away (rmq printMsg -t T | head): stop quietly.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        print(f"{PROG} {command}: interrupted", file=sys.stderr)
        return 130
    return 0
