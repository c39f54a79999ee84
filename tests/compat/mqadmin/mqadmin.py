"""Run Apache RocketMQ's mqadmin 4.9.7 (``rocketmq-tools`` from Maven Central) against a
nameserver, many commands in one warm JVM, for ``tests/test_mqadmin.py``::

    from mqadmin import MQAdmin  # tests/compat/mqadmin on sys.path

    with MQAdmin(work_dir, "127.0.0.1:9876") as admin:
        result = admin.run("topicList", "-c")
        print(result.output)

``pom.xml`` next to this file declares ``rocketmq-tools``; the classpath is resolved with the
apache_broker launcher's Maven helper (same ``~/.m2``, same ``-o`` fallback) and
``MQAdminDriver.java`` runs as a single-file source program (no build step): it reads one
command per line and answers with one JSON line holding everything the command printed. mqadmin
prints a failed command's stack trace and carries on, so callers must check the output, not
only that the call returned. Each ``run`` adds ``-n <namesrv>``.

By hand: ``python tests/compat/mqadmin/mqadmin.py -n 127.0.0.1:9876 clusterList`` (one
command, its output on stdout).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "apache_broker"))
from apache_rocketmq import (  # noqa: E402
    LOGBACK_XML,
    ApacheRocketMQError,
    die_with_parent,
    java_executable,
    resolve_classpath,
)

DRIVER = HERE / "MQAdminDriver.java"
START_TIMEOUT_S = 120.0  # compiling the driver in memory takes a few seconds on a busy machine


@dataclass(frozen=True)
class CommandResult:
    """What one mqadmin command printed, and how it ended."""

    args: list[str]
    output: str
    ms: int
    interrupted: bool  # still running at its time limit, and interrupted
    exited: bool  # mqadmin called System.exit (a command line it could not parse)

    @property
    def failed(self) -> bool:
        """The output carries an exception or a usage message."""
        return self.exited or "Exception" in self.output or "usage: mqadmin" in self.output


class MQAdmin:
    """One JVM running mqadmin commands against ``namesrv_addr`` (see the module doc)."""

    def __init__(self, work_dir: Path, namesrv_addr: str) -> None:
        self.work = Path(work_dir)
        self.namesrv_addr = namesrv_addr
        home = self.work / "rocketmq_home"
        (home / "conf").mkdir(parents=True, exist_ok=True)
        (home / "conf" / "logback_tools.xml").write_text(LOGBACK_XML)
        self.log_path = self.work / "mqadmin.log"
        self._stderr_path = self.work / "mqadmin.stderr"
        env = {**os.environ, "ROCKETMQ_HOME": str(home)}
        env.pop("JAVA_TOOL_OPTIONS", None)
        with self._stderr_path.open("wb") as err:
            self.proc = subprocess.Popen(
                [
                    *die_with_parent(),
                    java_executable(),
                    "-Xmx256m",
                    "-XX:+UseSerialGC",
                    "-XX:TieredStopAtLevel=1",
                    "-XX:-UsePerfData",
                    "-Djava.net.preferIPv4Stack=true",
                    f"-Duser.home={self.work}",  # the client's ~/logs stay in the work dir
                    f"-Drocketmq.home.dir={home}",
                    f"-Drmq.logFile={self.log_path}",
                    "-cp",
                    resolve_classpath(HERE),
                    str(DRIVER),
                ],
                cwd=self.work,
                env=env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=err,
                text=True,
                encoding="utf-8",
            )
        self._lock = threading.Lock()

    def run(self, *args: str, limit_s: float = 60.0) -> CommandResult:
        """Run ``mqadmin <args> -n <namesrv>``; interrupt it after ``limit_s`` seconds."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        line = "\t".join([str(int(limit_s * 1000)), *args, "-n", self.namesrv_addr])
        with self._lock:
            try:
                self.proc.stdin.write(line + "\n")
                self.proc.stdin.flush()
                answer = self.proc.stdout.readline()
            except (BrokenPipeError, OSError) as e:
                raise ApacheRocketMQError(f"the mqadmin JVM is gone: {e}\n{self.stderr()}") from e
        if not answer:
            raise ApacheRocketMQError(
                f"the mqadmin JVM exited ({self.proc.wait(10)}) during {' '.join(args)}:\n"
                + self.stderr()
            )
        d = json.loads(answer)
        return CommandResult(d["args"], d["output"], d["ms"], d["interrupted"], d["exited"])

    def stderr(self) -> str:
        try:
            return self._stderr_path.read_text(errors="replace")[-4000:]
        except FileNotFoundError:
            return ""

    def close(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        if self.proc.stdout is not None:
            self.proc.stdout.close()

    def __enter__(self) -> MQAdmin:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", "--namesrv", required=True, help="nameserver host:port")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="mqadmin command and options")
    args = parser.parse_args(argv)
    with (
        tempfile.TemporaryDirectory(prefix="mqadmin-") as work,
        MQAdmin(Path(work), args.namesrv) as admin,
    ):
        result = admin.run(*args.command)
        print(result.output, end="")
        return 1 if result.failed else 0


if __name__ == "__main__":
    sys.exit(main())
