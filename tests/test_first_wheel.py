"""The release wheel of `make wheel`, installed as a user would: a fresh venv outside the source
tree, `pip install --no-index dist/rmq-*.whl`, a broker started from another directory with that
venv's Python, a message sent and received with that venv's SDK, its `rmq clusterList`.

The wheel is built once, by `make wheel` (a prerequisite of `make test-python`; it rebuilds only
when a source changed), never here: run `make wheel` before running this file by hand.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers import TEST_STORE_CONF, free_port

ROOT = Path(__file__).resolve().parent.parent
DIST = ROOT / "dist"

# The SDK round trip, run by the fresh venv's interpreter (argv: nameserver address).
ROUND_TRIP = """
import sys

import rmq

ns = sys.argv[1]
with rmq.Producer("wheel-producer", ns) as producer:
    sent = producer.send(rmq.Message("WheelTopic", b"hello from the wheel", tags="first"))
    print("sent", sent.status, sent.msg_id)
with rmq.PullConsumer(
    "wheel-consumer", ns, consume_from_where="CONSUME_FROM_FIRST_OFFSET"
) as consumer:
    consumer.subscribe("WheelTopic")
    batch = consumer.poll(10000)
    for m in batch:
        print("received", m.msg_id, m.tags, m.body.decode())
print("module", rmq.__file__)
"""


def the_wheel() -> Path:
    wheels = sorted(DIST.glob("rmq-*.whl"))
    if len(wheels) != 1:
        pytest.fail(f"expected one dist/rmq-*.whl, found {wheels}: run `make wheel` first")
    return wheels[0]


def clean_env(venv: Path) -> dict[str, str]:
    """The environment of a user who has only the fresh venv: no source tree on any path."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    return env


@pytest.fixture(scope="module")
def fresh_venv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A new venv (no network) with the wheel, and nothing else, installed into it."""
    venv = tmp_path_factory.mktemp("user") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    done = subprocess.run(
        [
            *(str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--no-index"),
            *("--disable-pip-version-check", str(the_wheel())),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env=clean_env(venv),
        cwd=venv.parent,
    )
    assert done.returncode == 0, done.stderr
    yield venv


def test_the_wheel_is_abi3_manylinux2014_and_stripped(tmp_path: Path) -> None:
    wheel = the_wheel()
    # name-version-python-abi-platform.whl; the platform may be a dotted set of tags.
    _, _, python_tag, abi_tag, platforms = wheel.stem.split("-")
    assert (python_tag, abi_tag) == ("cp310", "abi3"), wheel.name
    assert {"manylinux_2_17_x86_64", "manylinux2014_x86_64"} & set(platforms.split(".")), wheel.name

    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        for packaged in (
            "rmq/py.typed",
            "rmq/_rmq.pyi",
            "rmq/console/static/index.html",
            "rmq/console/static/console.js",
            "rmq/console/static/console.css",
            "rmq/console/static/chart.js",
        ):
            assert packaged in names, f"{packaged} missing from {wheel.name}"
        so = zf.extract("rmq/_rmq.abi3.so", tmp_path)
        metadata = next(n for n in names if n.endswith(".dist-info/METADATA"))
        requires = [
            line.split(":", 1)[1].strip()
            for line in zf.read(metadata).decode().splitlines()
            if line.startswith("Requires-Dist:")
        ]

    # The tag is honest: no symbol needs a glibc newer than 2.17.
    versions = subprocess.run(
        ["readelf", "--version-info", "--wide", so], capture_output=True, text=True, check=True
    ).stdout
    glibc = {tuple(int(p) for p in v.split(".")) for v in re.findall(r"GLIBC_(\d+\.\d+)", versions)}
    assert glibc and max(glibc) <= (2, 17), sorted(glibc)
    # Stripped: no symbol table, no debug info.
    sections = subprocess.run(
        ["readelf", "--section-headers", "--wide", so], capture_output=True, text=True, check=True
    ).stdout
    assert ".symtab" not in sections and ".debug_info" not in sections

    # Runtime dependencies: none; [spark] at the versions requirements-dev.txt pins and tests.
    pins = dict(
        line.split("==", 1)
        for line in (ROOT / "requirements-dev.txt").read_text().splitlines()
        if "==" in line and not line.startswith("#")
    )
    requires = [r.replace("'", '"') for r in requires]
    assert all('extra == "spark"' in r for r in requires), requires
    for package in ("pyspark", "pyarrow"):
        (spec,) = [r for r in requires if r.startswith(package)]
        assert f">={pins[package]}" in spec.replace(" ", ""), (spec, pins[package])


def test_a_fresh_venv_runs_a_broker_and_the_sdk_from_the_wheel(
    fresh_venv: Path, tmp_path: Path
) -> None:
    python = fresh_venv / "bin" / "python"
    env = clean_env(fresh_venv)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    ns_port, port = free_port(), free_port()
    conf = elsewhere / "broker.conf"
    conf.write_text(
        "brokerName = broker-wheel\n"
        "brokerIP1 = 127.0.0.1\n"
        f"listenPort = {port}\n"
        f"storePathRootDir = {elsewhere / 'store'}\n"
        "autoCreateTopicEnable = true\n"
        "mappedFileSizeCommitLog = 16777216\n" + TEST_STORE_CONF
    )
    broker = subprocess.Popen(
        [str(python), "-m", "rmq.broker", "-c", str(conf), "--namesrv-port", str(ns_port)],
        cwd=elsewhere,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    started: list[str] = []
    drain: threading.Thread | None = None
    try:
        assert broker.stderr is not None
        for line in broker.stderr:
            started.append(line)
            if "): listening on" in line:  # the broker's line, after the embedded nameserver's
                break
        else:
            pytest.fail(f"the wheel's broker exited ({broker.wait()}): {''.join(started)}")
        # Keep reading its log so the broker never blocks on a full pipe.
        drain = threading.Thread(target=broker.stderr.read, daemon=True)
        drain.start()
        ns = f"127.0.0.1:{ns_port}"

        run = subprocess.run(
            [str(python), "-c", ROUND_TRIP, ns],
            cwd=elsewhere,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert run.returncode == 0, run.stderr
        lines = run.stdout.splitlines()
        sent = next(line for line in lines if line.startswith("sent "))
        assert sent.split()[1] == "SEND_OK", run.stdout
        msg_id = sent.split()[2]
        assert f"received {msg_id} first hello from the wheel" in lines, run.stdout
        # The SDK (and so the broker, the same interpreter) came from the venv, not the tree.
        module = next(line for line in lines if line.startswith("module "))
        assert module.startswith(f"module {fresh_venv}/lib/"), module

        cluster = subprocess.run(
            [str(fresh_venv / "bin" / "rmq"), "clusterList", "-n", ns],
            cwd=elsewhere,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert cluster.returncode == 0, cluster.stderr
        assert "broker-wheel" in cluster.stdout and f"127.0.0.1:{port}" in cluster.stdout
    finally:
        broker.terminate()
        broker.wait(timeout=60)
        if drain is not None:
            drain.join(timeout=60)
        if broker.stderr is not None:
            broker.stderr.close()
