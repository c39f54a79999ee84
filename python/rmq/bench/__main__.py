"""``python -m rmq.bench``: see :mod:`rmq.bench.cli`."""

from __future__ import annotations

import sys

from rmq.bench.cli import main

if __name__ == "__main__":
    sys.exit(main())
