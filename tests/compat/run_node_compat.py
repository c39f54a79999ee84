"""Run Alibaba's ali-ons (the RocketMQ 4.x Node client) against a nameserver + broker.

The Node side is ``tests/compat/node`` (``compat.js``; ``package.json`` and
``package-lock.json`` pin ali-ons). This module installs it with ``npm ci`` when
``node_modules`` is older than the lock file, creates the topics the script needs on the broker,
and runs it::

    from run_node_compat import run_check  # tests/compat on sys.path
    summary = run_check("127.0.0.1:9876", "127.0.0.1:10911", prefix="ons1")

``run_check`` returns the script's JSON summary and raises :class:`NodeCompatError` (with the
summary and output) when the install failed or any check failed.

Manual use::

    python tests/compat/run_node_compat.py --namesrv 127.0.0.1:9876 --broker 127.0.0.1:10911

Needs Node.js 18+ and npm; the first ``npm ci`` downloads ali-ons and its 54 dependencies.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from compat_common import (
    CompatError,
    build_lock,
    create_topics,
    run_check_program,
    run_logged,
    summary_errors,
    tail,
)

NODE_DIR = Path(__file__).resolve().parent / "node"
INSTALL_HINT = "install Node.js 18+ and npm (e.g. apt-get install -y nodejs npm)"
INSTALL_TIMEOUT_S = 600.0


class NodeCompatError(CompatError):
    """The Node check could not be installed or run, or a check failed."""


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise NodeCompatError(f"`{name}` not found on PATH; {INSTALL_HINT}")
    return path


def install() -> Path:
    """``npm ci`` in tests/compat/node unless node_modules is newer than the lock file."""
    stamp = NODE_DIR / "node_modules" / ".package-lock.json"
    lock = NODE_DIR / "package-lock.json"
    if stamp.is_file() and stamp.stat().st_mtime >= lock.stat().st_mtime:
        return NODE_DIR
    npm = _tool("npm")
    with build_lock(NODE_DIR / ".install.lock"):
        if stamp.is_file() and stamp.stat().st_mtime >= lock.stat().st_mtime:
            return NODE_DIR
        cmd = [npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"]
        code, output = run_logged(cmd, NODE_DIR, INSTALL_TIMEOUT_S)
        if code != 0 or not stamp.is_file():
            raise NodeCompatError(
                f"`npm ci` in {NODE_DIR} failed (npm registry unreachable?):\n" + tail(output),
                output=output,
            )
        now = time.time()
        os.utime(stamp, (now, now))
    return NODE_DIR


def topics_for(prefix: str) -> list[str]:
    """The topics compat.js uses (its retry group's %RETRY% topic included: ali-ons looks a
    route up when it subscribes, so a retry topic created later is seen late)."""
    return [f"{prefix}_main", f"{prefix}_retry", f"{prefix}_delay", f"%RETRY%{prefix}_retry"]


def run_check(
    namesrv: str,
    broker: str,
    *,
    prefix: str | None = None,
    count: int = 30,
    timeout: float = 60.0,
) -> dict[str, Any]:
    """Create the topics on ``broker``, run compat.js; return its summary or raise."""
    install()
    node = _tool("node")
    prefix = prefix or f"ons{int(time.time() * 1000)}"
    create_topics(broker, topics_for(prefix))
    cmd = [node, "compat.js", "--namesrv", namesrv, "--prefix", prefix]
    cmd += ["--count", str(count), "--timeout", f"{timeout:g}"]
    limit = 2 * timeout + 60
    proc, summary = run_check_program(
        cmd, name="Node check", limit=limit, error=NodeCompatError, cwd=NODE_DIR
    )
    output = proc.stdout + proc.stderr
    if proc.returncode != 0 or not summary.get("ok"):
        errors = summary_errors(summary)
        raise NodeCompatError(
            f"ali-ons check failed (exit {proc.returncode}):\n{errors}\n--- stderr (tail) ---\n"
            + tail(proc.stderr),
            summary=summary,
            output=output,
        )
    return summary


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Run the ali-ons (Node) client check.")
    parser.add_argument("--namesrv", required=True)
    parser.add_argument("--broker", required=True, help="broker address: topics are made there")
    parser.add_argument("--count", type=int, default=30)
    args = parser.parse_args(argv)
    try:
        summary = run_check(args.namesrv, args.broker, count=args.count)
    except NodeCompatError as e:
        print(e, file=sys.stderr)
        return 1
    print(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
