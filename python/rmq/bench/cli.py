"""Command line of ``python -m rmq.bench``: options after RocketMQ's benchmark tools
(``-n``, ``-t``, ``-w``, ``-s``, ``-b``), plus ``-d``/``-c`` to bound a run and ``--json`` for
scripts. Errors that stop a run before it starts are one line on stderr and exit status 1;
Ctrl-C prints the summary of what ran and exits with 130."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

from rmq._rmq import BENCHMARK_TOPIC
from rmq.bench._report import print_summary
from rmq.bench.stats import LatencySummary
from rmq.errors import RemotingConnectError, RemotingTimeoutError, RmqError, TopicNotExistError
from rmq.tls import TlsOptions, add_tls_arguments

__all__ = ["build_parser", "main"]

EXIT_INTERRUPTED = 130
DEFAULT_NAMESRV = "127.0.0.1:9876"


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def _seconds(text: str) -> float:
    value = float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be more than 0 seconds, not {text}")
    return value


def _common(p: argparse.ArgumentParser, *, namesrv: bool = True) -> None:
    if namesrv:
        p.add_argument(
            "-n",
            "--namesrv",
            metavar="ADDR",
            help="nameserver address list, host:port;host:port "
            f"(default: $NAMESRV_ADDR, else {DEFAULT_NAMESRV})",
        )
        p.add_argument(
            "-t", "--topic", default=BENCHMARK_TOPIC, help=f"topic (default: {BENCHMARK_TOPIC})"
        )
        p.add_argument(
            "--access-key",
            metavar="AK",
            help="ACL account to sign every request with (default: $RMQ_ACCESS_KEY)",
        )
        p.add_argument(
            "--secret-key",
            metavar="SK",
            help="the account's secret key (default: $RMQ_SECRET_KEY; never printed)",
        )
        add_tls_arguments(p)
    bound = p.add_mutually_exclusive_group()
    bound.add_argument(
        "-d", "--duration", type=_seconds, metavar="SECONDS", help="stop after this long"
    )
    bound.add_argument("-c", "--count", type=_positive, metavar="N", help="stop after N messages")
    p.add_argument(
        "--json", action="store_true", help="print the summary as one JSON object on stdout"
    )
    p.add_argument("-q", "--quiet", action="store_true", help="no progress line on stderr")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m rmq.bench",
        description="Load generator for rmq (and any RocketMQ 4.x broker), after RocketMQ's "
        "benchmark Producer and Consumer. Without -d or -c a run lasts until Ctrl-C.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("producer", help="send messages and measure send TPS and RT")
    _common(p)
    p.add_argument(
        "-w",
        "--threads",
        type=_positive,
        metavar="N",
        help="sending threads (default: 64; 1 with --async)",
    )
    p.add_argument(
        "-s",
        "--size",
        type=_positive,
        default=128,
        metavar="BYTES",
        help="message body size (default: 128)",
    )
    p.add_argument(
        "-b",
        "--batch-size",
        type=int,
        default=0,
        metavar="N",
        help="messages per batch request (0 or 1: single sends; default: 0)",
    )
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--async", dest="async_", action="store_true", help="send asynchronously")
    mode.add_argument("--oneway", action="store_true", help="send one-way (no response)")
    p.add_argument(
        "-i",
        "--in-flight",
        type=_positive,
        default=1000,
        metavar="N",
        help="with --async: sends outstanding at most (default: 1000)",
    )
    p.add_argument(
        "--tags",
        type=int,
        nargs="?",
        const=1,
        default=0,
        metavar="N",
        help="tag each message with one of N tags tag0..tagN-1 (default: no tag; N=1 alone)",
    )
    p.add_argument("-k", "--keys", action="store_true", help="give each message a unique key")
    p.add_argument(
        "--rate",
        type=_positive,
        metavar="N",
        help="send at most N messages per second in all (default: as fast as possible)",
    )
    p.add_argument("-g", "--group", default="benchmark_producer", help="producer group")
    p.add_argument(
        "--timeout",
        type=_positive,
        default=3000,
        metavar="MS",
        help="send timeout (default: 3000)",
    )

    c = sub.add_parser("consumer", help="consume a topic and measure TPS and latencies")
    _common(c)
    c.add_argument(
        "-g",
        "--group",
        default="",
        help="consumer group (default: a new one per run, benchmark_consumer_<pid>_<ms>)",
    )
    c.add_argument(
        "-w",
        "--threads",
        type=_positive,
        default=20,
        metavar="N",
        help="consume threads (default: 20)",
    )
    c.add_argument(
        "-e", "--expression", default="*", help="tag expression, e.g. 'tag0 || tag1' (default: *)"
    )
    c.add_argument(
        "--from",
        dest="consume_from",
        choices=["first", "last"],
        default="first",
        help="where a group with no committed offset starts (default: first: drain the topic)",
    )
    c.add_argument(
        "--pull-batch-size",
        type=_positive,
        default=32,
        metavar="N",
        help="messages per pull (default: 32)",
    )
    c.add_argument(
        "-b",
        "--batch-size",
        type=_positive,
        default=1,
        metavar="N",
        help="messages per listener call (default: 1)",
    )
    c.add_argument(
        "--no-latency",
        dest="latency",
        action="store_false",
        help="the listener only counts (a listener that does nothing: the SDK's own rate); "
        "no latency figures",
    )

    b = sub.add_parser(
        "baseline",
        help="loopback TCP echo of the same bytes (no broker): the same-run reference figure",
    )
    _common(b, namesrv=False)
    b.add_argument("-w", "--threads", type=_positive, default=4, metavar="N")
    b.add_argument("-s", "--size", type=_positive, default=128, metavar="BYTES")
    b.add_argument("-b", "--batch-size", type=_positive, default=1, metavar="N")
    return parser


def _fail(text: str) -> int:
    sys.stderr.write(f"rmq.bench: {text}\n")
    sys.stderr.flush()
    return 1


def _explain(exc: RmqError, namesrv: str, topic: str, role: str) -> str:
    """One line: what went wrong and what to check."""
    text = " ".join(str(exc).split())
    if isinstance(exc, RemotingConnectError | RemotingTimeoutError):
        if isinstance(exc, RemotingTimeoutError):
            what = f"no answer from the nameserver at {namesrv}"
        elif "refused" in text.lower():
            what = f"cannot reach the nameserver at {namesrv} (connection refused)"
        else:
            what = f"cannot reach the nameserver at {namesrv} ({text})"
        return (
            f"{what}: check that it is running (python -m rmq.namesrv, or a broker started "
            "without -n runs one) and that -n / $NAMESRV_ADDR names it"
        )
    if isinstance(exc, TopicNotExistError):
        if role == "consumer":
            return (
                f"topic {topic!r} has no route at nameserver {namesrv}: nothing was sent to it "
                "yet, or no broker is registered there; run the producer first or check -t/-n"
            )
        return (
            f"no route for topic {topic!r} at nameserver {namesrv}: check that a broker is "
            "running and registered with it (its namesrvAddr or -n), and that the topic "
            "exists or the broker has autoCreateTopicEnable=true"
        )
    return f"{type(exc).__name__}: {text}"


def _run(
    role: str,
    namesrv: str,
    topic: str,
    as_json: bool,
    body: Callable[[], tuple[dict[str, Any], dict[str, LatencySummary]]],
) -> int:
    try:
        summary, latencies = body()
    except KeyboardInterrupt:
        _fail("interrupted before the run started")
        return EXIT_INTERRUPTED
    except RmqError as exc:
        return _fail(_explain(exc, namesrv, topic, role))
    print_summary(summary, latencies, as_json)
    if summary.get("interrupted"):
        return EXIT_INTERRUPTED
    done = summary.get("sent", summary.get("consumed", 0))
    failures = int(summary.get("failures", 0))
    if failures and not done:
        errors = ", ".join(f"{k}: {v}" for k, v in summary.get("errors", {}).items())
        first = summary.get("first_error")
        detail = f"; the first: {first}" if first else ""
        return _fail(f"every send failed ({errors}{detail}); check the broker's log and -n/-t")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m rmq.bench``. Returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    progress = not args.quiet

    if args.command == "baseline":
        from rmq.bench.baseline import BaselineOptions, run_baseline

        duration = args.duration if args.duration is not None or args.count else 10.0
        bopts = BaselineOptions(
            threads=args.threads,
            message_size=args.size,
            batch_size=args.batch_size,
            duration_s=duration,
            count=args.count,
            progress=progress,
        )
        return _run("baseline", "", "", args.json, lambda: run_baseline(bopts))

    from rmq.client._instance import default_namesrv_addr

    namesrv = default_namesrv_addr(args.namesrv)
    access_key = args.access_key or os.environ.get("RMQ_ACCESS_KEY") or None
    secret_key = args.secret_key or os.environ.get("RMQ_SECRET_KEY") or None
    if bool(access_key) != bool(secret_key):
        missing = (
            "--secret-key (or RMQ_SECRET_KEY)" if access_key else "--access-key (or RMQ_ACCESS_KEY)"
        )
        return _fail(f"ACL credentials need both keys: {missing} is not set")
    if args.command == "producer":
        from rmq.bench.producer import ProducerOptions, run_producer

        mode = "async" if args.async_ else "oneway" if args.oneway else "sync"
        if args.batch_size < 0:
            parser.error("-b/--batch-size must be 0 or more")
        if args.batch_size > 1 and mode != "sync":
            parser.error(f"batches are sent synchronously: -b {args.batch_size} with --{mode}")
        if args.tags < 0:
            parser.error("--tags must be 0 or more")
        threads = args.threads if args.threads is not None else (1 if mode == "async" else 64)
        popts = ProducerOptions(
            namesrv=namesrv,
            topic=args.topic,
            group=args.group,
            threads=threads,
            message_size=args.size,
            batch_size=args.batch_size,
            mode=mode,
            in_flight=args.in_flight,
            tag_count=args.tags,
            keys=args.keys,
            rate=args.rate or 0,
            duration_s=args.duration,
            count=args.count,
            send_timeout_ms=args.timeout,
            progress=progress,
            access_key=access_key,
            secret_key=secret_key,
            tls=TlsOptions.from_args(args),
        )
        return _run("producer", namesrv, args.topic, args.json, lambda: run_producer(popts))

    from rmq.bench.consumer import ConsumerOptions, run_consumer

    copts = ConsumerOptions(
        namesrv=namesrv,
        topic=args.topic,
        group=args.group,
        expression=args.expression,
        threads=args.threads,
        consume_from=f"CONSUME_FROM_{args.consume_from.upper()}_OFFSET",
        pull_batch_size=args.pull_batch_size,
        consume_batch_size=args.batch_size,
        latency=args.latency,
        duration_s=args.duration,
        count=args.count,
        progress=progress,
        access_key=access_key,
        secret_key=secret_key,
        tls=TlsOptions.from_args(args),
    )
    return _run("consumer", namesrv, args.topic, args.json, lambda: run_consumer(copts))
