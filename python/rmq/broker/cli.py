"""Command line of the broker: options as RocketMQ's ``mqbroker`` (``-c``, ``-n``, ``-p``)."""

from __future__ import annotations

import argparse
import logging
import sys
import warnings
from collections.abc import Sequence

from rmq.config import (
    BrokerConfig,
    RmqConfigWarning,
    escape_property_value,
    load_broker_config,
    redact_secrets,
)
from rmq.errors import RmqError
from rmq.logsetup import add_arguments, configure_from_args

__all__ = ["build_parser", "main"]

log = logging.getLogger("rmq.broker")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m rmq.broker",
        description=(
            "Run one rmq broker (RocketMQ-compatible): the store, the network server on "
            "listenPort, and registration with the nameservers (an embedded one on 9876 when "
            "none is configured)."
        ),
    )
    parser.add_argument(
        "-c",
        "--config",
        metavar="FILE",
        help="broker config file (Java properties with RocketMQ's broker.conf keys)",
    )
    parser.add_argument(
        "-n",
        "--namesrv",
        metavar="ADDR",
        help="nameserver address list, host:port;host:port (overrides namesrvAddr)",
    )
    parser.add_argument(
        "-p",
        "--print-config",
        action="store_true",
        help="print the effective configuration in broker.conf format and exit",
    )
    parser.add_argument(
        "--namesrv-port",
        type=int,
        default=9876,
        metavar="PORT",
        help="port of the embedded nameserver, run when no nameserver address is configured "
        "(default: 9876; 0 = any free port)",
    )
    parser.add_argument(
        "--console-port",
        type=int,
        metavar="PORT",
        help="also serve the web console (rmq.console) on this port, against this broker's "
        "nameservers (default: off; 0 = any free port)",
    )
    parser.add_argument(
        "--console-host",
        default="127.0.0.1",
        metavar="HOST",
        help="address the web console listens on (default: 127.0.0.1; it has no login)",
    )
    add_arguments(parser, "broker")
    return parser


def format_config(config: BrokerConfig, store_defaults: dict[str, str]) -> str:
    """The effective configuration as a ``broker.conf`` text (it loads back unchanged, except
    that secrets such as ``innerSecretKey`` show as ``******``)."""
    broker = redact_secrets(config.to_properties())
    lines = ["# rmq broker: effective configuration", "", "# broker keys"]
    lines += [f"{key}={escape_property_value(value)}" for key, value in broker.items()]
    store = redact_secrets({**store_defaults, **config.store})
    lines += ["", "# store keys (checked by the native store)"]
    lines += [
        f"{key}={escape_property_value(store[key])}" for key in sorted(store) if key not in broker
    ]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m rmq.broker``. Returns the exit status."""
    args = build_parser().parse_args(argv)
    configure_from_args(args, "broker")
    # rmq.config logs every config warning itself; showing the warning too would say it twice.
    warnings.simplefilter("ignore", RmqConfigWarning)

    overrides = {"namesrvAddr": args.namesrv} if args.namesrv is not None else {}
    try:
        from rmq._rmq import store_config_defaults

        store_defaults = store_config_defaults()
        config = load_broker_config(args.config, overrides, store_defaults=store_defaults)
    except ImportError as exc:
        log.error("rmq's native module is not importable (%s); run `make build`", exc)
        return 1
    except RmqError as exc:
        log.error("%s", exc)
        return 1

    if args.print_config:
        sys.stdout.write(format_config(config, store_defaults))
        return 0

    from rmq.broker.server import run_broker

    console = (args.console_host, args.console_port) if args.console_port is not None else None
    return run_broker(
        config,
        embedded_namesrv_port=args.namesrv_port,
        config_path=args.config,
        console=console,
    )
