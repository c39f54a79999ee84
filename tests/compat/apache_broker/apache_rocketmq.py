"""Start the real Apache RocketMQ nameserver and broker (4.9.7, from Maven Central) for tests.

``pom.xml`` next to this file declares ``rocketmq-namesrv`` and ``rocketmq-broker``; Maven
resolves them into ``~/.m2`` and writes their classpath to ``target/classpath.txt``
(``dependency:build-classpath``), and the two servers run straight from those jars::

    from apache_rocketmq import ApacheRocketMQ  # tests/compat/apache_broker on sys.path

    with ApacheRocketMQ(tmp_dir) as rocketmq:
        producer = rmq.Producer("g", rocketmq.namesrv_addr)
        ...
        print(rocketmq.log_tail())  # the servers' own logs, for assertion messages

or by hand (prints the addresses, stops on Ctrl-C)::

    python tests/compat/apache_broker/apache_rocketmq.py [--dir /tmp/rocketmq]

Why 4.9.7: ``rocketmq-namesrv`` and ``rocketmq-broker`` 4.9.8 were never published to Maven
Central (only the client-side modules were), so 4.9.7 is the newest 4.9 server there. It is the
server the 4.9.8 client was released against; the remoting protocol is the same.

Needs a JDK 17+ and Maven 3 (``apt-get install -y openjdk-17-jdk-headless maven``). The first
resolution downloads about 30 MB into ``~/.m2``; later runs need no network.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests/compat: compat_common
import compat_common
from compat_common import JDK_MAVEN_HINT, build_lock, find_tool, run_maven, tail

HERE = Path(__file__).resolve().parent
ROCKETMQ_VERSION = "4.9.7"
INSTALL_HINT = JDK_MAVEN_HINT
MAVEN_TIMEOUT_S = 900.0
START_TIMEOUT_S = 60.0
TAIL_LINES = 30

# RocketMQ 4.9 predates the module system: its store unmaps files through DirectByteBuffer's
# cleaner and Netty reaches into the NIO selector, both by reflection. Java 17 needs these
# opened (without them the broker still starts, but logs reflective-access failures and cannot
# release mapped files). JAVA_OPTIONS, the tests' JVM, leaves out runbroker.sh's G1/CMS tuning:
# the defaults of a 256 MB heap are fine for a test, and several of those flags are gone in 17.
JAVA_17_OPTIONS = [
    "-XX:-UsePerfData",  # no /tmp/hsperfdata_* files
    "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
    "--add-opens=java.base/java.nio=ALL-UNNAMED",
    "--add-opens=java.base/jdk.internal.ref=ALL-UNNAMED",
    # TLS "permissive" (the default) makes both servers build a self-signed certificate at
    # start, which takes ~10 s of entropy on a fresh VM; nothing here uses TLS.
    "-Dtls.server.mode=disabled",
    "-Djava.security.egd=file:/dev/./urandom",
    "-Djava.net.preferIPv4Stack=true",
    # The broker refuses writes once the disk is 90 % full; CI disks can be. RocketMQ's own
    # integration tests raise both ratios the same way.
    "-Drocketmq.broker.diskSpaceWarningLevelRatio=0.99",
    "-Drocketmq.broker.diskSpaceCleanForciblyRatio=0.99",
]
JAVA_OPTIONS = [
    "-Xms256m",
    "-Xmx256m",
    "-XX:MaxDirectMemorySize=128m",
    "-XX:+UseSerialGC",
    "-XX:TieredStopAtLevel=1",  # quicker warm-up; these JVMs live for seconds
    *JAVA_17_OPTIONS,
]
# A broker as runbroker.sh of 4.9 starts it, for benchmarks (benches/vs_apache): a 4 GiB G1
# heap with runbroker.sh's G1 settings and full JIT. Left out: -XX:+AlwaysPreTouch (it would
# touch the whole heap at start, so "idle RSS" would be the heap size) and the GC-logging and
# biased-locking flags that Java 17 no longer accepts.
BENCH_BROKER_JAVA_OPTIONS = [
    "-Xms4g",
    "-Xmx4g",
    "-XX:+UseG1GC",
    "-XX:G1HeapRegionSize=16m",
    "-XX:G1ReservePercent=25",
    "-XX:InitiatingHeapOccupancyPercent=30",
    "-XX:SoftRefLRUPolicyMSPerMB=0",
    "-XX:-OmitStackTraceInFastThrow",
    *JAVA_17_OPTIONS,
]
# The keys of broker_settings that shrink the store and speed up timers for tests; a
# benchmark broker (test_store=False) leaves them at RocketMQ's defaults (1 GiB CommitLog files).
TEST_STORE_KEYS = (
    "mappedFileSizeCommitLog",
    "mappedFileSizeConsumeQueue",
    "maxHashSlotNum",
    "maxIndexNum",
    "messageDelayLevel",
    "transactionCheckInterval",
    "transactionTimeOut",
)

# NamesrvStartup and BrokerStartup load $ROCKETMQ_HOME/conf/logback_{namesrv,broker}.xml and
# refuse to start without it. Everything goes to one file per process (-Drmq.logFile).
LOGBACK_XML = """<?xml version="1.0" encoding="UTF-8"?>
<configuration>
  <appender name="FILE" class="ch.qos.logback.core.FileAppender">
    <file>${rmq.logFile}</file>
    <encoder><pattern>%d{HH:mm:ss.SSS} %-5level [%thread] %logger{0} - %msg%n</pattern></encoder>
  </appender>
  <root level="INFO"><appender-ref ref="FILE"/></root>
</configuration>
"""


class ApacheRocketMQError(RuntimeError):
    """Maven or Java is missing, the classpath could not be resolved, or a server did not
    start."""


def _tool(name: str) -> str:
    return find_tool(name, INSTALL_HINT, ApacheRocketMQError)


def java_executable() -> str:
    return compat_common.java_executable(INSTALL_HINT, ApacheRocketMQError)


def _classpath_is_fresh(project: Path) -> bool:
    pom, out = project / "pom.xml", project / "target" / "classpath.txt"
    if not out.is_file() or out.stat().st_mtime < pom.stat().st_mtime:
        return False
    jars = out.read_text().strip().split(os.pathsep)
    return bool(jars) and all(Path(jar).is_file() for jar in jars)


def resolve_classpath(project: Path) -> str:
    """The classpath of the Maven project in directory ``project`` (a ``pom.xml`` declaring
    jars from Maven Central), resolving it with Maven when needed.

    The first call on a machine downloads the jars into ``~/.m2``; after that it reads
    ``<project>/target/classpath.txt``. If the online resolution fails (Central unreachable)
    it is retried once with ``mvn -o``.
    """
    out = project / "target" / "classpath.txt"
    if _classpath_is_fresh(project):
        return out.read_text().strip()
    mvn = _tool("mvn")
    java_executable()  # fail early with the install hint if there is no JDK
    # One Maven run at a time (parallel test workers share target/).
    with build_lock(project / "target" / ".classpath.lock"):
        if not _classpath_is_fresh(project):
            base = [
                mvn,
                "-q",
                "-B",
                "-Dstyle.color=never",
                "dependency:build-classpath",
                f"-Dmdep.outputFile={out}",
            ]
            resolved, output = run_maven(base, project, MAVEN_TIMEOUT_S, out, ApacheRocketMQError)
            if not resolved:
                raise ApacheRocketMQError(
                    f"Maven could not resolve the jars of {project / 'pom.xml'} "
                    "(Maven Central unreachable on a first run?):\n" + tail(output, TAIL_LINES)
                )
    return out.read_text().strip()


def classpath() -> str:
    """The nameserver's and broker's classpath (see :func:`resolve_classpath`)."""
    return resolve_classpath(HERE)


def _port_is_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("0.0.0.0", port))
        except OSError:
            return False
    return True


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def free_broker_port() -> int:
    """A port P with P-2 and P+1 free too: the broker listens on P, its "VIP" channel on P-2
    and its HA service on P+1."""
    for _ in range(200):
        port = free_port()
        if port > 1026 and all(_port_is_free(p) for p in (port - 2, port + 1)):
            return port
    raise ApacheRocketMQError("found no free port P with P-2 and P+1 free as well")


def die_with_parent() -> list[str]:
    """A command prefix that makes the JVM get SIGKILL when the process that started it dies,
    so a test run killed by a timeout leaves no broker behind: util-linux's ``setpriv
    --pdeathsig`` (Linux; without it the JVMs are only stopped by :meth:`JavaServer.stop`)."""
    setpriv = shutil.which("setpriv") if sys.platform == "linux" else None
    return [setpriv, "--pdeathsig", "KILL", "--"] if setpriv else []


class JavaServer:
    """One RocketMQ JVM (NamesrvStartup or BrokerStartup), stdout+stderr to a file, its
    logback log to another."""

    def __init__(
        self,
        name: str,
        main_class: str,
        conf: Path,
        home: Path,
        work: Path,
        java_options: Sequence[str] = JAVA_OPTIONS,
    ) -> None:
        self.name = name
        self.out_path = work / f"{name}.out"
        self.log_path = work / f"{name}.log"
        env = {**os.environ, "ROCKETMQ_HOME": str(home)}
        env.pop("JAVA_TOOL_OPTIONS", None)
        with self.out_path.open("wb") as out:
            self.proc = subprocess.Popen(
                [
                    *die_with_parent(),
                    java_executable(),
                    *java_options,
                    f"-Duser.home={work}",  # RocketMQ's defaults (~/store, ~/logs) stay in work
                    f"-Drmq.logFile={self.log_path}",
                    "-cp",
                    classpath(),
                    main_class,
                    "-c",
                    str(conf),
                ],
                cwd=work,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
            )

    def output(self) -> str:
        try:
            return self.out_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def wait_for(self, needle: str, timeout: float = START_TIMEOUT_S) -> None:
        deadline = time.monotonic() + timeout
        while needle not in self.output():
            if self.proc.poll() is not None:
                raise ApacheRocketMQError(
                    f"{self.name} exited with {self.proc.returncode} before {needle!r}:\n"
                    + self.tail()
                )
            if time.monotonic() > deadline:
                raise ApacheRocketMQError(
                    f"{self.name} did not print {needle!r} in {timeout:.0f} s:\n" + self.tail()
                )
            time.sleep(0.05)

    def tail(self, lines: int = TAIL_LINES) -> str:
        state = "running" if self.proc.poll() is None else f"exited {self.proc.returncode}"
        return (
            f"--- {self.name} ({state}) stdout/stderr, last {lines} lines ---\n"
            f"{tail(self.output(), lines)}\n"
            f"--- {self.name} log {self.log_path}, last {lines} lines ---\n"
            f"{tail(self.log(), lines)}"
        )

    def stop(self) -> None:
        if self.proc.poll() is None:
            # SIGKILL: the store is thrown away, so RocketMQ's shutdown hooks (which flush
            # and can take seconds) are not needed.
            self.proc.kill()
        self.proc.wait(10)


def rocketmq_home(work: Path) -> Path:
    """``$ROCKETMQ_HOME`` under ``work``, with the logback files both servers insist on."""
    home = work / "rocketmq_home"
    (home / "conf").mkdir(parents=True, exist_ok=True)
    for name in ("logback_namesrv.xml", "logback_broker.xml"):
        (home / "conf" / name).write_text(LOGBACK_XML)
    return home


def broker_settings(
    broker_name: str,
    port: int,
    namesrv_addr: str,
    store: Path,
    extra: dict[str, str] | None,
    test_store: bool = True,
) -> dict[str, str]:
    """A test broker's ``broker.conf``: small files, fast delay levels and checks (without
    ``test_store``: RocketMQ's default store, :data:`TEST_STORE_KEYS` left out); ``extra``
    overrides or adds keys (``brokerRole``, ``brokerId``, ``haMasterAddress``...)."""
    settings = {
        "brokerClusterName": "DefaultCluster",
        "brokerName": broker_name,
        "brokerId": "0",
        "brokerIP1": "127.0.0.1",
        "listenPort": str(port),
        "namesrvAddr": namesrv_addr,
        "storePathRootDir": str(store),
        "storePathCommitLog": str(store / "commitlog"),
        "autoCreateTopicEnable": "true",
        "autoCreateSubscriptionGroup": "true",
        "flushDiskType": "ASYNC_FLUSH",
        # Small files: 16 MB of CommitLog, 6 000-entry consume queues, a tiny index.
        "mappedFileSizeCommitLog": "16777216",
        "mappedFileSizeConsumeQueue": "120000",
        "maxHashSlotNum": "10000",
        "maxIndexNum": "40000",
        # Every delay level 1 s (default 1s 5s 10s 30s 1m ...): a consume failure goes back
        # with level 3 + reconsume count, and tests should not wait 10 s for it.
        "messageDelayLevel": " ".join(["1s"] * 18),
        # Transaction checks every second for halves older than a second (60 s and 6 s).
        "transactionCheckInterval": "1000",
        "transactionTimeOut": "1000",
    }
    if not test_store:
        for key in TEST_STORE_KEYS:
            del settings[key]
    settings.update(extra or {})
    return settings


class ApacheBroker:
    """One Apache RocketMQ broker JVM registering with a running nameserver (Apache's or
    rmq's), all state in ``work``: a master of its own group, or a slave of another broker's
    (``extra={"brokerRole": "SLAVE", "brokerId": "1"}``, same ``broker_name``). ``start()``
    returns once the broker printed "boot success". ``java_options`` and ``test_store=False``
    make a benchmark broker (:data:`BENCH_BROKER_JAVA_OPTIONS`, default store)."""

    def __init__(
        self,
        work: Path,
        namesrv_addr: str,
        broker_name: str = "broker-a",
        extra: dict[str, str] | None = None,
        java_options: Sequence[str] = JAVA_OPTIONS,
        test_store: bool = True,
    ) -> None:
        self.work = Path(work)
        self.work.mkdir(parents=True, exist_ok=True)
        self.port = free_broker_port()
        self.addr = f"127.0.0.1:{self.port}"
        self.store = self.work / "store"
        self.settings = broker_settings(
            broker_name, self.port, namesrv_addr, self.store, extra, test_store
        )
        self.java_options = java_options
        self.server: JavaServer | None = None

    @property
    def ha_port(self) -> int:
        """Where a master's HA service listens (Apache's BrokerStartup: listenPort + 1)."""
        return int(self.settings.get("haListenPort", self.port + 1))

    def start(self) -> ApacheBroker:
        conf = self.work / "broker.conf"
        conf.write_text("".join(f"{k}={v}\n" for k, v in self.settings.items()))
        self.server = JavaServer(
            "broker",
            "org.apache.rocketmq.broker.BrokerStartup",
            conf,
            rocketmq_home(self.work),
            self.work,
            self.java_options,
        )
        self.server.wait_for("boot success")
        return self

    def log_tail(self, lines: int = TAIL_LINES) -> str:
        return self.server.tail(lines) if self.server is not None else ""

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop()


class ApacheRocketMQ:
    """An Apache RocketMQ nameserver and one master broker (``DefaultCluster``/``broker-a``,
    ``autoCreateTopicEnable=true``, ``brokerIP1=127.0.0.1``; ``broker_extra`` adds keys) on free
    ports, with all state in ``work_dir``. ``start()`` returns once the broker has registered
    with the nameserver. ``broker_java_options`` and ``test_store`` go to :class:`ApacheBroker`
    (the nameserver keeps the small test JVM)."""

    def __init__(
        self,
        work_dir: Path,
        broker_name: str = "broker-a",
        broker_extra: dict[str, str] | None = None,
        broker_java_options: Sequence[str] = JAVA_OPTIONS,
        test_store: bool = True,
    ) -> None:
        self.work = Path(work_dir)
        self.broker_name = broker_name
        self.broker_extra = broker_extra
        self.broker_java_options = broker_java_options
        self.test_store = test_store
        self.namesrv: JavaServer | None = None
        self.broker: JavaServer | None = None
        self.apache_broker: ApacheBroker | None = None
        self.namesrv_addr = ""
        self.broker_addr = ""
        self.startup_seconds = 0.0
        self.resolve_seconds = 0.0

    def start(self) -> ApacheRocketMQ:
        started = time.monotonic()
        classpath()  # resolve first, so Maven's time is not counted as a slow JVM start
        resolved = time.monotonic()
        home = rocketmq_home(self.work)

        ns_port = free_port()
        self.namesrv_addr = f"127.0.0.1:{ns_port}"
        ns_conf = self.work / "namesrv.conf"
        ns_conf.write_text(
            f"listenPort={ns_port}\n"
            f"kvConfigPath={self.work / 'namesrv' / 'kvConfig.json'}\n"
            f"configStorePath={self.work / 'namesrv' / 'namesrv.properties'}\n"
        )
        self.namesrv = JavaServer(
            "namesrv", "org.apache.rocketmq.namesrv.NamesrvStartup", ns_conf, home, self.work
        )
        self.namesrv.wait_for("The Name Server boot success")

        self.apache_broker = ApacheBroker(
            self.work,
            self.namesrv_addr,
            self.broker_name,
            self.broker_extra,
            self.broker_java_options,
            self.test_store,
        )
        self.broker_addr = self.apache_broker.addr
        self.apache_broker.start()
        self.broker = self.apache_broker.server
        self._wait_registered()
        self.startup_seconds = time.monotonic() - resolved
        self.resolve_seconds = resolved - started
        return self

    def _wait_registered(self, timeout: float = 30.0) -> None:
        """Wait until the nameserver routes TBW102 to this broker (the broker registers
        itself synchronously at start, so this is normally immediate)."""
        from rmq._rmq import RemotingClient  # the test's dependency, not the launcher's

        client = RemotingClient()
        deadline = time.monotonic() + timeout
        try:
            while True:
                try:
                    resp = client.invoke(self.namesrv_addr, 105, {"topic": "TBW102"})
                    if resp.code == 0 and self.broker_addr.encode() in (resp.body or b""):
                        return
                    last = f"code {resp.code}: {resp.remark}"
                except Exception as e:  # connection refused while the JVM binds
                    last = repr(e)
                if time.monotonic() > deadline:
                    raise ApacheRocketMQError(
                        f"the broker did not register with the nameserver in {timeout:.0f} s "
                        f"(last GET_ROUTEINFO_BY_TOPIC TBW102: {last}):\n" + self.log_tail()
                    )
                time.sleep(0.1)
        finally:
            client.close()

    def log_tail(self, lines: int = TAIL_LINES) -> str:
        """The last lines of both servers' output and logs, for assertion messages."""
        return "\n".join(s.tail(lines) for s in (self.namesrv, self.broker) if s is not None)

    def stop(self) -> None:
        for server in (self.broker, self.namesrv):
            if server is not None:
                server.stop()

    def __enter__(self) -> ApacheRocketMQ:
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, help="work directory (default: a new temp dir)")
    parser.add_argument(
        "--classpath-only", action="store_true", help="resolve the jars with Maven and exit"
    )
    args = parser.parse_args(argv)
    if args.classpath_only:
        print(classpath())
        return 0
    work = args.dir or Path(tempfile.mkdtemp(prefix="apache-rocketmq-"))
    work.mkdir(parents=True, exist_ok=True)
    with ApacheRocketMQ(work) as rocketmq:
        print(
            f"Apache RocketMQ {ROCKETMQ_VERSION}: namesrv {rocketmq.namesrv_addr}, "
            f"broker {rocketmq.broker_addr} (started in {rocketmq.startup_seconds:.1f} s); "
            f"logs in {work}. Ctrl-C stops both.",
            flush=True,
        )
        with contextlib.suppress(KeyboardInterrupt):
            while rocketmq.broker and rocketmq.broker.proc.poll() is None:
                time.sleep(1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
