"""The logging of a server process (broker, nameserver): one setting for Python and Rust.

Owns the command line options ``--log-level``, ``--log-format`` (text or json), ``--log-dir``
(RocketMQ's ``~/logs/rmqlogs``, or ``$RMQ_LOG_DIR`` when set; ``-`` or ``none``: stderr
only), ``--log-max-size`` and
``--log-backups``, and what they set up: every record of the process, Python's and the Rust
crates' (which reach :mod:`logging` through ``rmq._rmq``'s bridge as loggers
``rmq.<crate>.<module>``, with their own thread names), goes to stderr and to
``<log-dir>/<process>.log`` (``broker.log``, ``namesrv.log``, RocketMQ's names), rotated by
size with :class:`logging.handlers.RotatingFileHandler`. Each line carries the time (ms),
level, thread name and logger name. A log directory that cannot be written is reported at
start-up and the process logs to stderr only, rather than not starting.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import logging.handlers
import os
import sys
import threading
import time
from pathlib import Path

__all__ = [
    "DEFAULT_BACKUPS",
    "DEFAULT_LOG_DIR",
    "DEFAULT_MAX_BYTES",
    "JsonFormatter",
    "RustThreadNames",
    "TextFormatter",
    "add_arguments",
    "configure",
    "configure_from_args",
]

DEFAULT_LOG_DIR = "~/logs/rmqlogs"
DEFAULT_MAX_BYTES = 128 << 20
DEFAULT_BACKUPS = 10
LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")
FORMATS = ("text", "json")
NO_LOG_DIR = ("-", "none")

_log = logging.getLogger("rmq.logsetup")


class TextFormatter(logging.Formatter):
    """``2026-11-25 00:15:02.123 INFO    [rmq-io] rmq.remoting.io: message``."""

    default_msec_format = "%s.%03d"

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)-7s [%(threadName)s] %(name)s: %(message)s")


class JsonFormatter(logging.Formatter):
    """One JSON object a line: ``time`` (ISO 8601, ms, UTC offset), ``level``, ``thread``,
    ``logger``, ``message`` and, for exceptions, ``exception``."""

    def format(self, record: logging.LogRecord) -> str:
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(record.created))
        zone = time.strftime("%z", time.localtime(record.created))
        line: dict[str, str] = {
            "time": f"{stamp}.{int(record.msecs):03d}{zone[:3]}:{zone[3:]}",
            "level": record.levelname,
            "thread": str(record.threadName),
            "logger": record.name,
            "message": record.getMessage(),
        }
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, ensure_ascii=False)


class RustThreadNames(logging.Filter):
    """A Python record logged on a thread Rust started (a tokio worker calling a Python
    processor, which Python names ``Dummy-N``) gets that thread's own name (``rmq-io``)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if str(record.threadName).startswith("Dummy-"):
            comm = Path(f"/proc/self/task/{threading.get_native_id()}/comm")
            with contextlib.suppress(OSError):  # not Linux: keep Python's name
                record.threadName = comm.read_text(encoding="utf-8").strip() or record.threadName
        return True


def _size(text: str) -> int:
    """A byte count: ``1048576``, ``512k``, ``128m``, ``1g``."""
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    raw = text.strip().lower().removesuffix("b").removesuffix("i")
    factor = units.get(raw[-1:], 1)
    digits = raw[:-1] if raw[-1:] in units else raw
    try:
        value = int(digits) * factor
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a size (bytes, or with k, m, g: 128m)"
        ) from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: the size must be at least 1 byte")
    return value


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a file count (0 or more)")
    return value


def add_arguments(parser: argparse.ArgumentParser, process: str) -> None:
    """Add the logging options of ``process`` (``broker``, ``namesrv``) to ``parser``."""
    group = parser.add_argument_group("logging")
    group.add_argument(
        "--log-level",
        default="INFO",
        type=str.upper,
        choices=LEVELS,
        help="the least severe level logged, for Python and Rust alike (default: INFO)",
    )
    group.add_argument(
        "--log-format",
        default="text",
        type=str.lower,
        choices=FORMATS,
        help="text lines, or one JSON object a line (default: text)",
    )
    group.add_argument(
        "--log-dir",
        default=os.environ.get("RMQ_LOG_DIR") or DEFAULT_LOG_DIR,
        metavar="DIR",
        help=f"directory of {process}.log, besides stderr (default: $RMQ_LOG_DIR, else "
        f"{DEFAULT_LOG_DIR}; '-' or 'none': stderr only)",
    )
    group.add_argument(
        "--log-max-size",
        type=_size,
        default=DEFAULT_MAX_BYTES,
        metavar="SIZE",
        help=f"rotate {process}.log at this size (bytes, or 512k, 128m, 1g; default: 128m)",
    )
    group.add_argument(
        "--log-backups",
        type=_count,
        default=DEFAULT_BACKUPS,
        metavar="N",
        help=f"rotated files kept, {process}.log.1 to .N (default: {DEFAULT_BACKUPS})",
    )


def configure_from_args(args: argparse.Namespace, process: str) -> Path | None:
    """:func:`configure` with the options :func:`add_arguments` added."""
    return configure(
        process,
        level=args.log_level,
        fmt=args.log_format,
        log_dir=args.log_dir,
        max_bytes=args.log_max_size,
        backups=args.log_backups,
    )


def configure(
    process: str,
    *,
    level: str = "INFO",
    fmt: str = "text",
    log_dir: str | None = DEFAULT_LOG_DIR,
    max_bytes: int = DEFAULT_MAX_BYTES,
    backups: int = DEFAULT_BACKUPS,
) -> Path | None:
    """Send the process's records to stderr and ``<log_dir>/<process>.log``; returns the log
    file's path, or None when logging to stderr only (asked for, or the directory could not
    be written: then a warning says why)."""
    formatter: logging.Formatter = JsonFormatter() if fmt == "json" else TextFormatter()
    handlers: list[logging.Handler] = [logging.StreamHandler(sys.stderr)]
    path: Path | None = None
    problem = None
    if log_dir is not None and log_dir.strip().lower() not in NO_LOG_DIR:
        path = Path(os.path.expanduser(log_dir)).absolute() / f"{process}.log"
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            handlers.append(
                logging.handlers.RotatingFileHandler(
                    path, maxBytes=max_bytes, backupCount=backups, encoding="utf-8"
                )
            )
        except OSError as exc:
            problem = f"cannot write the log file {path} ({exc.strerror or exc}); "
            problem += "logging to stderr only: set --log-dir to a writable directory"
            path = None
    root = logging.getLogger()
    for old in root.handlers[:]:
        root.removeHandler(old)
        old.close()
    for handler in handlers:
        handler.setFormatter(formatter)
        handler.addFilter(RustThreadNames())
        root.addHandler(handler)
    levelno = logging.getLevelName(level.upper())
    root.setLevel(levelno)
    try:
        from rmq._rmq import set_log_level
    except ImportError:
        pass  # the entry point reports a missing native module itself
    else:
        set_log_level(levelno)
    if problem is not None:
        _log.warning("%s", problem)
    elif path is not None:
        _log.info("logging to %s (rotated at %d bytes, %d kept)", path, max_bytes, backups)
    return path
