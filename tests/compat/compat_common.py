"""What the compatibility runners (``run_java_compat``, ``run_go_compat``, ``run_node_compat``)
and the Apache RocketMQ launcher share: one build at a time per project directory, finding a
tool or the JDK, Maven with an offline retry, the tail of a long output, and the JSON summary
every check program prints as its last stdout line."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import subprocess
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

TAIL_LINES = 40


def tail(text: str, lines: int = TAIL_LINES) -> str:
    return "\n".join(text.splitlines()[-lines:])


@contextlib.contextmanager
def build_lock(lock_path: Path) -> Iterator[None]:
    """Serialise builds that share an output directory (parallel test workers)."""
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with lock_path.open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


JDK_MAVEN_HINT = (
    "install a JDK and Maven, e.g. on Debian/Ubuntu: "
    "sudo apt-get update && sudo apt-get install -y openjdk-17-jdk-headless maven"
)


def find_tool(name: str, hint: str, error: type[Exception]) -> str:
    """The path of ``name`` on PATH; raises ``error`` with ``hint`` when it is not there."""
    path = shutil.which(name)
    if path is None:
        raise error(f"`{name}` not found on PATH; {hint}")
    return path


def java_executable(hint: str, error: type[Exception]) -> str:
    """``$JAVA_HOME/bin/java`` when there is one, else ``java`` on PATH."""
    java_home = os.environ.get("JAVA_HOME")
    if java_home and (Path(java_home) / "bin" / "java").is_file():
        return str(Path(java_home) / "bin" / "java")
    return find_tool("java", hint, error)


def run_maven(
    base: Sequence[str], cwd: Path, timeout: float, product: Path, error: type[Exception]
) -> tuple[bool, str]:
    """Run the Maven command ``base`` in ``cwd``; when it fails and ~/.m2 holds a local
    repository, once more offline (``-o``: Maven Central may be unreachable, and everything may
    be cached). Success is exit code 0 with ``product`` a file, which is then touched (fresh
    even if Maven found nothing to redo). Returns whether it succeeded and the output of the
    attempts; raises ``error`` when an attempt overruns ``timeout`` seconds."""
    attempts = [list(base)]
    if (Path.home() / ".m2" / "repository").is_dir():
        attempts.append([*base, "-o"])
    output = ""
    for cmd in attempts:
        try:
            proc = subprocess.run(
                cmd,
                cwd=cwd,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=timeout,
                check=False,
            )
        except subprocess.TimeoutExpired as e:
            raise error(f"`{' '.join(cmd)}` did not finish in {timeout:.0f} s") from e
        output += f"$ {' '.join(cmd)}\n{proc.stdout}{proc.stderr}"
        if proc.returncode == 0 and product.is_file():
            now = time.time()
            os.utime(product, (now, now))
            return True, output
    return False, output


def newest_mtime(paths: Sequence[Path]) -> float:
    """The newest modification time of the given files and of every file under the given
    directories."""
    newest = 0.0
    for path in paths:
        if path.is_dir():
            for child in path.rglob("*"):
                if child.is_file():
                    newest = max(newest, child.stat().st_mtime)
        elif path.is_file():
            newest = max(newest, path.stat().st_mtime)
    return newest


def parse_summary(stdout: str) -> dict[str, Any] | None:
    """The last stdout line that starts with ``{``, parsed; None if there is none."""
    for line in reversed(stdout.splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                parsed = json.loads(line)
            except json.JSONDecodeError:
                return None
            return parsed if isinstance(parsed, dict) else None
    return None


class CompatError(RuntimeError):
    """A client check could not be built or run, or a check failed (``summary`` when it
    printed one, ``output`` its stdout and stderr)."""

    def __init__(
        self, message: str, *, summary: dict[str, Any] | None = None, output: str = ""
    ) -> None:
        super().__init__(message)
        self.summary = summary
        self.output = output


def run_check_program(
    cmd: Sequence[str],
    *,
    name: str,
    limit: float,
    error: type[CompatError],
    cwd: Path | None = None,
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    """Run a check program that prints a JSON summary as its last stdout line; return the
    process and the summary. Raises ``error`` when it overruns ``limit`` seconds or prints no
    summary (judging the summary is the caller's)."""
    try:
        proc = subprocess.run(
            list(cmd),
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=limit,
            check=False,
        )
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        raise error(f"{name} killed after {limit:.0f} s", output=out) from e
    output = proc.stdout + proc.stderr
    summary = parse_summary(proc.stdout)
    if summary is None:
        raise error(
            f"{name} exited {proc.returncode} without a JSON summary:\n" + tail(output),
            output=output,
        )
    return proc, summary


def summary_errors(summary: dict[str, Any]) -> str:
    """The errors a summary lists, one a line."""
    return "\n".join(str(e) for e in summary.get("errors") or []) or "no errors listed"


def run_logged(
    cmd: Sequence[str], cwd: Path, timeout: float, env: dict[str, str] | None = None
) -> tuple[int, str]:
    """Run a build step; return its exit code and its combined output (prefixed by the
    command line). A step that overruns counts as exit code -1."""
    header = f"$ {' '.join(cmd)}\n"
    try:
        proc = subprocess.run(
            list(cmd),
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return -1, f"{header}did not finish in {timeout:.0f} s\n"
    return proc.returncode, header + proc.stdout + proc.stderr


def create_topic_header(topic: str, queues: int = 4, order: bool = False) -> dict[str, str]:
    """UPDATE_AND_CREATE_TOPIC's header as the Java admin sends it (read/write queues alike)."""
    return {
        "topic": topic,
        "defaultTopic": "TBW102",
        "readQueueNums": str(queues),
        "writeQueueNums": str(queues),
        "perm": "6",
        "topicFilterType": "SINGLE_TAG",
        "topicSysFlag": "0",
        "order": str(order).lower(),
    }


def create_topics(broker_addr: str, topics: Sequence[str], queues: int = 4) -> None:
    """UPDATE_AND_CREATE_TOPIC on a broker (rmq or Apache) for each topic; raises
    RuntimeError naming the topic and the broker's answer when one is refused."""
    from rmq._rmq import RemotingClient  # the tests' dependency, not the runners'
    from rmq.codes import RequestCode, ResponseCode

    client = RemotingClient()
    try:
        for topic in topics:
            header = create_topic_header(topic, queues)
            resp = client.invoke(broker_addr, RequestCode.UPDATE_AND_CREATE_TOPIC, header)
            if resp.code != ResponseCode.SUCCESS:
                raise RuntimeError(
                    f"UPDATE_AND_CREATE_TOPIC {topic} on {broker_addr}: code {resp.code} "
                    f"({resp.remark})"
                )
    finally:
        client.close()
