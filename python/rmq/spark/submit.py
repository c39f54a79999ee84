"""``python -m rmq.spark.submit job.py [args]``: pyspark's ``spark-submit`` with the driver and
the Python workers on this interpreter.

``spark-submit`` runs the driver and the workers with ``PYSPARK_DRIVER_PYTHON`` /
``PYSPARK_PYTHON`` (or ``spark.pyspark.driver.python`` / ``spark.pyspark.python``), by default
the ``python3`` on PATH, which has no rmq unless the venv is activated. This sets both to the
interpreter running this module when the user has set neither, then runs pyspark's own
``bin/spark-submit`` with the arguments as given.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pyspark

__all__ = ["main", "spark_submit"]


def spark_submit() -> Path:
    """pyspark's ``bin/spark-submit``."""
    return Path(pyspark.__file__).parent / "bin" / "spark-submit"


def main(argv: list[str]) -> int:
    """Run ``spark-submit`` with ``argv`` (does not return), or print usage."""
    if not argv or argv[0] in ("-h", "--help"):
        print("usage: python -m rmq.spark.submit [spark-submit options] job.py [args]")
        print(f"runs {spark_submit()} with its Python on {sys.executable}")
        return 0 if argv else 2
    env = dict(os.environ)
    for key in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON"):
        env.setdefault(key, sys.executable)
    env.setdefault("SPARK_HOME", str(spark_submit().parent.parent))
    os.execve(str(spark_submit()), [str(spark_submit()), *argv], env)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
