"""Run Apache's Go RocketMQ client (``github.com/apache/rocketmq-client-go/v2``) against a
nameserver + broker.

The Go side is ``tests/compat/go`` (``main.go``; ``go.mod``/``go.sum`` pin the client,
v2.1.2). This module builds it into ``tests/compat/go/target/gocompat-<version>`` and runs it::

    from run_go_compat import run_check  # tests/compat on sys.path
    summary = run_check("127.0.0.1:9876", broker="127.0.0.1:10911", prefix="go1")

``run_check`` returns the program's JSON summary and raises :class:`GoCompatError` (with the
summary and output) when the build failed or any check failed. ``client_version`` builds against
another version of the client (``go mod edit -replace`` in a copy of the module) instead.

Manual use::

    python tests/compat/run_go_compat.py --namesrv 127.0.0.1:9876 --broker 127.0.0.1:10911

Needs Go 1.21+ (``go`` on PATH or ``/usr/local/go/bin/go``). The first build downloads the
client's modules from the Go module proxy into the module cache (about 10 MB).
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
    newest_mtime,
    run_check_program,
    run_logged,
    summary_errors,
    tail,
)

GO_DIR = Path(__file__).resolve().parent / "go"
TARGET = GO_DIR / "target"
CLIENT_MODULE = "github.com/apache/rocketmq-client-go/v2"
PINNED_VERSION = "v2.1.2"
INSTALL_HINT = (
    "install Go 1.21 or newer (https://go.dev/dl/, e.g. into /usr/local/go) or put `go` on PATH"
)
BUILD_TIMEOUT_S = 600.0


class GoCompatError(CompatError):
    """The Go check could not be built or run, or a check failed."""


def go_executable() -> str:
    found = shutil.which("go")
    if found:
        return found
    fallback = Path("/usr/local/go/bin/go")
    if fallback.is_file():
        return str(fallback)
    raise GoCompatError(f"`go` not found on PATH nor in /usr/local/go/bin; {INSTALL_HINT}")


def _go_env() -> dict[str, str]:
    # GOTOOLCHAIN=local: build with the installed toolchain, never download another one;
    # -mod=readonly: go.sum must already hold every checksum (it is committed).
    return {**os.environ, "GOTOOLCHAIN": "local", "GOFLAGS": "-mod=readonly -buildvcs=false"}


def build(client_version: str = PINNED_VERSION) -> Path:
    """Build the check against ``client_version`` of the client unless the binary is newer
    than the sources; return the binary's path."""
    go = go_executable()
    binary = TARGET / f"gocompat-{client_version}"
    sources = [GO_DIR / "main.go", GO_DIR / "go.mod", GO_DIR / "go.sum"]
    if binary.is_file() and binary.stat().st_mtime >= newest_mtime(sources):
        return binary
    with build_lock(TARGET / ".build.lock"):
        if binary.is_file() and binary.stat().st_mtime >= newest_mtime(sources):
            return binary
        env = _go_env()
        workdir = GO_DIR
        steps: list[list[str]] = []
        if client_version != PINNED_VERSION:
            # Another client version: a scratch copy of the module, re-resolved.
            workdir = TARGET / f"module-{client_version}"
            workdir.mkdir(parents=True, exist_ok=True)
            for src in sources:
                shutil.copy2(src, workdir / src.name)
            env = {**env, "GOFLAGS": "-mod=mod -buildvcs=false"}
            steps.append([go, "get", f"{CLIENT_MODULE}@{client_version}"])
        steps.append([go, "build", "-o", str(binary), "."])
        output = ""
        for step in steps:
            code, out = run_logged(step, workdir, BUILD_TIMEOUT_S, env)
            output += out
            if code != 0:
                raise GoCompatError(
                    f"building the Go check in {workdir} failed (module proxy unreachable on a "
                    "first build?):\n" + tail(output),
                    output=output,
                )
        now = time.time()
        os.utime(binary, (now, now))
    return binary


def run_check(
    namesrv: str,
    *,
    broker: str | None = None,
    prefix: str | None = None,
    count: int = 60,
    timeout: float = 60.0,
    log_dir: Path | None = None,
    client_version: str = PINNED_VERSION,
) -> dict[str, Any]:
    """Run the check; return its JSON summary or raise GoCompatError."""
    binary = build(client_version)
    prefix = prefix or f"go{int(time.time() * 1000)}"
    log_dir = log_dir or TARGET / "client-logs" / prefix
    cmd = [
        str(binary),
        "-namesrv",
        namesrv,
        "-prefix",
        prefix,
        "-count",
        str(count),
        "-timeout",
        f"{timeout:g}s",
        "-log-dir",
        str(log_dir),
    ]
    if broker:
        cmd += ["-broker", broker]
    limit = 2 * timeout + 60
    proc, summary = run_check_program(cmd, name="Go check", limit=limit, error=GoCompatError)
    output = proc.stdout + proc.stderr
    if proc.returncode != 0 or not summary.get("ok"):
        errors = summary_errors(summary)
        raise GoCompatError(
            f"Go client check ({client_version}) failed (exit {proc.returncode}); client log in "
            f"{log_dir}:\n{errors}",
            summary=summary,
            output=output,
        )
    return summary


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Run the RocketMQ Go client check.")
    parser.add_argument("--namesrv", help="nameserver address, host:port")
    parser.add_argument("--broker", help="broker address: create the topics there first")
    parser.add_argument("--count", type=int, default=60)
    parser.add_argument("--client-version", default=PINNED_VERSION)
    parser.add_argument("--build-only", action="store_true")
    args = parser.parse_args(argv)
    try:
        if args.build_only:
            print(build(args.client_version))
            return 0
        if not args.namesrv:
            parser.error("--namesrv is required (unless --build-only)")
        summary = run_check(
            args.namesrv,
            broker=args.broker,
            count=args.count,
            client_version=args.client_version,
        )
    except GoCompatError as e:
        print(e, file=sys.stderr)
        if e.summary is not None:
            print(json.dumps(e.summary, indent=2))
        return 1
    print(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
