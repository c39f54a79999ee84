"""Run the official Apache RocketMQ Java client against an rmq nameserver + broker (SPEC §4).

The Java side lives in ``tests/compat/java`` (a Maven project around
``org.apache.rocketmq:rocketmq-client`` 4.9.8); this module builds it into
``tests/compat/java/target/rmq-compat.jar`` and runs it:

    from run_java_compat import build_jar, run_check
    summary = run_check("127.0.0.1:9876", "compat_topic", 10_000, timeout=120.0)

``run_check`` returns the jar's one-line JSON summary as a dict and raises
:class:`JavaCompatError` (with the summary and the captured output) when any check failed.

Manual use, against a running nameserver and broker::

    python tests/compat/run_java_compat.py --namesrv 127.0.0.1:9876 [--count 10000]

Needs a JDK (17+) and Maven 3; on Debian: ``apt-get install -y openjdk-17-jdk-headless maven``.
The first build downloads the client and the Maven plugins into ~/.m2 (about 30 MB); later
builds need no network.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import compat_common
from compat_common import JDK_MAVEN_HINT, build_lock, find_tool, parse_summary, run_maven, tail

JAVA_DIR = Path(__file__).resolve().parent / "java"
JAR = JAVA_DIR / "target" / "rmq-compat.jar"
JAVA5_DIR = Path(__file__).resolve().parent / "java5"
"""rocketmq-client 5.x checks (Compat5, TimerCheck): one jar per client version, see
:func:`build_java5_jar`."""
INSTALL_HINT = JDK_MAVEN_HINT
BUILD_TIMEOUT_S = 900.0


class JavaCompatError(RuntimeError):
    """The Java compatibility check could not be built or run, or a check failed."""

    def __init__(
        self,
        message: str,
        *,
        summary: dict[str, Any] | None = None,
        stdout: str = "",
        stderr: str = "",
    ) -> None:
        super().__init__(message)
        self.summary = summary
        self.stdout = stdout
        self.stderr = stderr


def _tool(name: str) -> str:
    return find_tool(name, INSTALL_HINT, JavaCompatError)


def java_executable() -> str:
    return compat_common.java_executable(INSTALL_HINT, JavaCompatError)


def _newest_source_mtime(java_dir: Path) -> float:
    newest = (java_dir / "pom.xml").stat().st_mtime
    for path in (java_dir / "src").rglob("*"):
        if path.is_file():
            newest = max(newest, path.stat().st_mtime)
    return newest


def _jar_is_fresh(java_dir: Path, jar: Path) -> bool:
    return jar.is_file() and jar.stat().st_mtime >= _newest_source_mtime(java_dir)


def _build_lock(java_dir: Path) -> contextlib.AbstractContextManager[None]:
    """One Maven build at a time (parallel test workers share the project's target/)."""
    return build_lock(java_dir / "target" / ".build.lock")


def build_jar(java_dir: Path = JAVA_DIR, jar: Path = JAR, maven_args: Sequence[str] = ()) -> Path:
    """Build ``jar`` (by default target/rmq-compat.jar) from the Maven project in ``java_dir``
    unless it is newer than pom.xml and src/; ``maven_args`` go to ``mvn`` (e.g.
    ``-Drocketmq.version=5.5.0``). tests/compat/java5 builds its jars through here too.

    The first build downloads from Maven Central into ~/.m2; a rebuild with everything cached
    needs no network, and if the online attempt fails anyway (e.g. Central unreachable) it is
    retried once with ``mvn -o``.
    """
    if _jar_is_fresh(java_dir, jar):
        return jar
    mvn = _tool("mvn")
    java_executable()  # fail early with the install hint if there is no JDK
    with _build_lock(java_dir):
        if _jar_is_fresh(java_dir, jar):  # another process built it while we waited
            return jar
        base = [mvn, "-q", "-B", "-Dstyle.color=never", *maven_args, "package", "-DskipTests"]
        built, output = run_maven(base, java_dir, BUILD_TIMEOUT_S, jar, JavaCompatError)
        if built:
            return jar
        raise JavaCompatError(
            f"Maven build in {java_dir} failed (Maven Central unreachable on a first build?):\n"
            + tail(output)
        )


def build_java5_jar(version: str = "5.3.1") -> Path:
    """The tests/compat/java5 jar built against rocketmq-client ``version``
    (target/rmq-compat5-VERSION.jar; main class Compat5, TimerCheck run with ``-cp``)."""
    return build_jar(
        JAVA5_DIR,
        JAVA5_DIR / "target" / f"rmq-compat5-{version}.jar",
        [f"-Drocketmq.version={version}"],
    )


def describe_failure(summary: dict[str, Any]) -> str:
    """A few lines saying which phase failed and how (from the jar's JSON summary)."""
    out: list[str] = []
    if summary.get("error"):
        out.append(f"error: {summary['error']}")
    for phase in ("produce", "admin", "consume-push", "consume-lite"):
        info = summary.get(phase)
        if not isinstance(info, dict) or info.get("ok", True):
            continue
        parts: list[dict[str, Any]] = [info]
        parts += [v for k, v in info.items() if k in ("all", "tagA") and isinstance(v, dict)]
        for part in parts:
            for key in (
                "skipped",
                "error",
                "missing",
                "missingFirst",
                "mismatchFirst",
                "offsetGaps",
                "positionsDifferFirst",
            ):
                value = part.get(key)
                if value:
                    out.append(f"{phase}: {key}: {value}")
            committed = part.get("committed")
            if isinstance(committed, dict) and committed.get("problems"):
                out.append(f"{phase}: committed offsets: {committed['problems']}")
    for error in summary.get("errors") or []:
        out.append(f"error: {error}")
    for warning in summary.get("warnings") or []:
        out.append(f"warning: {warning}")
    return "\n".join(out) if out else "no details in the summary"


def run_check(
    namesrv: str,
    topic: str,
    count: int,
    timeout: float,
    *,
    modes: Sequence[str] = ("all",),
    group: str | None = None,
    create_topic: str | None = None,
    log_dir: Path | None = None,
    extra_args: Sequence[str] = (),
    jvm_args: Sequence[str] = (),
) -> dict[str, Any]:
    """Run the Java client check and return its JSON summary; raise JavaCompatError on failure.

    ``timeout`` bounds each consume phase (seconds to wait for all ``count`` messages); the
    whole process is killed if it runs past ``4 * timeout + 120`` seconds.
    ``create_topic`` is a broker address for UPDATE_AND_CREATE_TOPIC; without it the topic is
    auto-created by the first send (autoCreateTopicEnable, via TBW102). ``jvm_args`` go
    before ``-jar`` (system properties such as ``-Dtls.enable=true``).
    """
    jar = build_jar()
    if log_dir is None:
        log_dir = JAVA_DIR / "target" / "client-logs" / topic
    cmd = [
        java_executable(),
        "-Xmx1g",
        *jvm_args,
        "-jar",
        str(jar),
        "--namesrv",
        namesrv,
        "--topic",
        topic,
        "--count",
        str(count),
        "--timeout",
        f"{timeout:g}",
        "--mode",
        ",".join(modes),
        "--log-dir",
        str(log_dir),
    ]
    if group is not None:
        cmd += ["--group", group]
    if create_topic is not None:
        cmd += ["--create-topic", create_topic]
    cmd += list(extra_args)
    limit = 4 * timeout + 120
    try:
        proc = subprocess.run(
            cmd,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=limit,
            check=False,
        )
    except subprocess.TimeoutExpired as e:
        stdout = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        stderr = e.stderr.decode() if isinstance(e.stderr, bytes) else (e.stderr or "")
        raise JavaCompatError(
            f"Java compatibility check killed after {limit:.0f} s:\n{tail(stderr)}",
            stdout=stdout,
            stderr=stderr,
        ) from e
    summary = parse_summary(proc.stdout)
    if summary is None:
        raise JavaCompatError(
            f"Java compatibility check exited {proc.returncode} without a JSON summary:\n"
            + tail(proc.stdout + proc.stderr),
            stdout=proc.stdout,
            stderr=proc.stderr,
        )
    if proc.returncode != 0 or not summary.get("ok"):
        raise JavaCompatError(
            f"Java client compatibility check failed (exit {proc.returncode}); "
            f"client log in {summary.get('logDir')}\n"
            + describe_failure(summary)
            + "\n--- stderr (tail) ---\n"
            + tail(proc.stderr),
            summary=summary,
            stdout=proc.stdout,
            stderr=proc.stderr,
        )
    return summary


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Run the RocketMQ Java client compatibility check against rmq."
    )
    parser.add_argument("--namesrv", help="nameserver address, host:port")
    parser.add_argument("--topic", default=f"compat_{int(time.time() * 1000)}")
    parser.add_argument("--count", type=int, default=10_000)
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per consume phase")
    parser.add_argument(
        "--mode",
        default="all",
        help="comma-separated: produce, admin, consume-push, consume-lite, all",
    )
    parser.add_argument("--create-topic", metavar="BROKER_ADDR", default=None)
    parser.add_argument("--build-only", action="store_true", help="build the jar and exit")
    args = parser.parse_args(argv)
    try:
        if args.build_only:
            started = time.monotonic()
            jar = build_jar()
            print(f"{jar} ({time.monotonic() - started:.1f} s)")
            return 0
        if not args.namesrv:
            parser.error("--namesrv is required (unless --build-only)")
        summary = run_check(
            args.namesrv,
            args.topic,
            args.count,
            args.timeout,
            modes=args.mode.split(","),
            create_topic=args.create_topic,
        )
    except JavaCompatError as e:
        print(e, file=sys.stderr)
        if e.summary is not None:
            print(json.dumps(e.summary, indent=2))
        return 1
    print(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
