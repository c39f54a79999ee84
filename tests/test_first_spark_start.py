"""Spark finds rmq however the job is started (issue 17 item 4): a job run with the venv's
interpreter while PATH's ``python3`` has no rmq (the venv not activated), and one started with
``python -m rmq.spark.submit`` (pyspark's ``spark-submit`` on this interpreter), each read
``format("rmq")`` from a real broker in local mode, without Spark's "replaced a statically
registered data source" warning. One Spark job each: Spark takes seconds to start."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest

pytest.importorskip("pyspark", minversion="4.2")
pytest.importorskip("pyarrow")

import rmq
from rmq.errors import ConfigError
from test_spark import SparkCluster

JOB = """
import sys

import rmq.spark  # before the session: its Python workers run this interpreter
from pyspark.sql import SparkSession

spark = (
    SparkSession.builder.master("local[1]")
    .config("spark.ui.enabled", "false")
    .config("spark.ui.showConsoleProgress", "false")
    .getOrCreate()
)
rmq.spark.register(spark)  # as a user might; must not register a second time
df = spark.read.format("rmq").option("namesrv", sys.argv[1]).option("topic", sys.argv[2]).load()
print("COUNT", df.count())
spark.stop()
"""
# PATH with only the system's python3, which has no rmq (checked below).
BARE_PATH = "/usr/bin:/bin"
TOPIC = "SparkStartTopic"
ROWS = 25


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkCluster]:
    c = SparkCluster(tmp_path_factory.mktemp("spark-start"))
    try:
        c.start_broker("broker-a")
        c.create_topic(TOPIC, queues=2)
        with rmq.Producer("spark-start-test", c.namesrv) as p:
            p.send_batch([rmq.Message(TOPIC, b"m%d" % i) for i in range(ROWS)])
        yield c
    finally:
        c.stop()


def bare_env() -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "VIRTUAL_ENV", "SPARK_HOME")
        and not k.startswith("PYTHON")
    }
    env.update(PATH=BARE_PATH, SPARK_LOCAL_IP="127.0.0.1")
    probe = subprocess.run(["python3", "-c", "import rmq"], env=env, capture_output=True)
    assert probe.returncode != 0, "the test needs a PATH whose python3 has no rmq"
    return env


def run_job(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv, capture_output=True, text=True, timeout=300, env=bare_env(), cwd=cwd
    )


def check(done: subprocess.CompletedProcess[str]) -> None:
    assert done.returncode == 0, done.stderr[-4000:]
    assert f"COUNT {ROWS}" in done.stdout, done.stdout
    assert "replaced a statically registered data source" not in done.stderr, done.stderr[-4000:]


def test_a_job_run_with_the_venvs_python_without_activating_it(
    cluster: SparkCluster, tmp_path: Path
) -> None:
    job = tmp_path / "job.py"
    job.write_text(JOB)
    check(run_job([sys.executable, str(job), cluster.namesrv, TOPIC], tmp_path))


def test_a_job_started_with_spark_submit(cluster: SparkCluster, tmp_path: Path) -> None:
    job = tmp_path / "job.py"
    job.write_text(JOB)
    argv = [sys.executable, "-m", "rmq.spark.submit", "--master", "local[1]", str(job)]
    check(run_job([*argv, cluster.namesrv, TOPIC], tmp_path))


def test_a_session_whose_workers_cannot_import_rmq_fails_naming_the_fix() -> None:
    """A session started before ``import rmq.spark`` with another interpreter for its workers
    (here the system's python3): registering fails and says which setting to change."""
    import rmq.spark

    conf = SimpleNamespace(
        get=lambda key: "/usr/bin/python3" if key == "spark.pyspark.python" else None
    )
    session = SimpleNamespace(
        sparkContext=SimpleNamespace(getConf=lambda: conf, pythonExec="python3")
    )
    with pytest.raises(ConfigError) as err:
        rmq.spark.register(session)
    msg = str(err.value)
    assert "'/usr/bin/python3', which cannot import rmq" in msg
    assert f".config('spark.pyspark.python', {sys.executable!r})" in msg
    assert "python -m rmq.spark.submit" in msg
