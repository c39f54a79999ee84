"""The process's log setting (rmq.logsetup): a broker's broker.log carries Python's and Rust's
lines with time, level, thread and logger; rotation by size; JSON lines; an unwritable
directory falls back to stderr; the level filters Rust records too."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

from helpers import TEST_STORE_CONF, BrokerProcess, free_port

TEXT_LINE = re.compile(
    r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}) (DEBUG|INFO|WARNING|ERROR)\s+"
    r"\[([^\]]+)\] ([\w.]+): (.*)$"
)

# Frame length 8, header length 1000: longer than the frame, so the Rust codec rejects it and
# the connection's reader (a tokio worker, thread rmq-io) logs a warning and closes.
BAD_FRAME = (8).to_bytes(4, "big") + (1000).to_bytes(4, "big") + b"garbage!"


def start_broker(tmp: Path, *options: str) -> tuple[BrokerProcess, int]:
    port = free_port()
    conf = tmp / "broker.conf"
    conf.write_text(
        "brokerName = broker-logs\n"
        "brokerIP1 = 127.0.0.1\n"
        f"listenPort = {port}\n"
        f"storePathRootDir = {tmp / 'store'}\n"
        "mappedFileSizeCommitLog = 1048576\n"
        # An ephemeral HA port: listenPort + 1 may be taken when many tests run at once, and
        # a test below reads the HA service's start line.
        "haListenPort = 0\n" + TEST_STORE_CONF
    )
    return BrokerProcess("-c", str(conf), *options, cwd=tmp), port


def wait_listening(port: int) -> None:
    deadline = time.monotonic() + 60
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=5).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def send_bad_frame(port: int) -> None:
    """Send a malformed frame and wait until the broker has closed the connection (its
    warning is logged before it closes)."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(BAD_FRAME)
        assert s.recv(100) == b"", "the broker answered a malformed frame"


def test_broker_log_has_timestamped_python_and_rust_lines(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    broker, port = start_broker(tmp_path, "--log-dir", str(logs))
    try:
        broker.wait_for("): listening on")
        send_bad_frame(port)
        broker.wait_for("malformed frame")
    finally:
        assert broker.stop() == 0
    lines = (logs / "broker.log").read_text(encoding="utf-8").splitlines()
    parsed = [TEXT_LINE.match(line) for line in lines]
    assert all(parsed), [line for line, m in zip(lines, parsed, strict=True) if not m]
    fields = [m.groups() for m in parsed if m]
    python = [f for f in fields if f[3] == "rmq.broker" and "): listening on" in f[4]]
    assert python and python[0][2] == "MainThread", python
    rust = [f for f in fields if "malformed frame" in f[4]]
    assert len(rust) == 1, fields
    assert rust[0][1:4] == ("WARNING", "rmq-io", "rmq.remoting.io"), rust
    # The Rust line's time is when it was logged, to the millisecond.
    assert rust[0][0] >= python[0][0]
    # A Rust record made on a Python thread carries the Python thread's name ...
    ha = [f for f in fields if "HA service accepting slaves" in f[4]]
    assert [f[2:4] for f in ha] == [("MainThread", "rmq.store.ha")], fields
    # ... and a Python record made on a Rust thread the Rust thread's (not "Dummy-N").
    registered = [f for f in fields if "new broker registered" in f[4]]
    assert registered and all(f[2] == "rmq-io" for f in registered), fields
    # stderr still shows every line (`make run` prints to the terminal as before).
    assert "malformed frame" in broker.log and "listening on" in broker.log


def test_log_file_rotates_at_the_max_size(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    options = ("--log-dir", str(logs), "--log-max-size", "1k", "--log-backups", "2")
    broker, port = start_broker(tmp_path, *options)
    try:
        broker.wait_for("): listening on")
        for _ in range(40):
            send_bad_frame(port)
    finally:
        assert broker.stop() == 0
    names = sorted(p.name for p in logs.iterdir())
    assert names == ["broker.log", "broker.log.1", "broker.log.2"], names
    for name in names[1:]:
        size = (logs / name).stat().st_size
        assert 0 < size <= 1024, (name, size)


def test_json_format_parses_line_by_line(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    broker, port = start_broker(tmp_path, "--log-dir", str(logs), "--log-format", "json")
    try:
        broker.wait_for("): listening on")
        send_bad_frame(port)
        broker.wait_for("malformed frame")
    finally:
        assert broker.stop() == 0
    records = [json.loads(line) for line in (logs / "broker.log").read_text().splitlines()]
    assert records and all(
        set(r) == {"time", "level", "thread", "logger", "message"} for r in records
    ), records
    assert all(
        re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}[+-]\d\d:\d\d$", r["time"])
        for r in records
    )
    rust = [r for r in records if "malformed frame" in r["message"]]
    assert [(r["level"], r["thread"], r["logger"]) for r in rust] == [
        ("WARNING", "rmq-io", "rmq.remoting.io")
    ]


def test_unwritable_log_dir_falls_back_to_stderr_with_a_warning(tmp_path: Path) -> None:
    not_a_dir = tmp_path / "a-file"
    not_a_dir.write_text("")
    broker, _ = start_broker(tmp_path, "--log-dir", str(not_a_dir / "logs"))
    try:
        warning = broker.wait_for("cannot write the log file")
        broker.wait_for("): listening on")
    finally:
        assert broker.stop() == 0
    assert "WARNING" in warning and "--log-dir" in warning, warning
    assert str(not_a_dir / "logs" / "broker.log") in warning


def test_level_filters_rust_records_too(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    broker, port = start_broker(tmp_path, "--log-dir", str(logs), "--log-level", "ERROR")
    try:
        wait_listening(port)
        send_bad_frame(port)  # a Rust WARNING: below ERROR
    finally:
        assert broker.stop() == 0
    text = (logs / "broker.log").read_text()
    assert "malformed frame" not in text and "malformed frame" not in broker.log
    assert "listening on" not in text  # a Python INFO line: filtered too


def test_bad_options_are_refused_clearly(tmp_path: Path) -> None:
    for option, value, said in (
        ("--log-level", "LOUD", "invalid choice: 'LOUD'"),
        ("--log-format", "xml", "invalid choice: 'xml'"),
        ("--log-max-size", "big", "is not a size"),
    ):
        done = subprocess.run(
            [sys.executable, "-m", "rmq.broker", option, value],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            timeout=60,
        )
        assert done.returncode == 2 and said in done.stderr, done.stderr
        assert "Traceback" not in done.stderr


def test_namesrv_writes_namesrv_log(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    options = ["--host", "127.0.0.1", "-p", "0", "--log-dir", str(logs), "--log-format", "json"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "rmq.namesrv", *options],
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
    )
    assert proc.stderr is not None
    try:
        for line in proc.stderr:
            if "listening on" in line:
                break
    finally:
        proc.terminate()
        proc.wait(30)
        proc.stderr.close()
    records = [json.loads(line) for line in (logs / "namesrv.log").read_text().splitlines()]
    assert any(r["logger"] == "rmq.namesrv" and "listening on" in r["message"] for r in records), (
        records
    )
