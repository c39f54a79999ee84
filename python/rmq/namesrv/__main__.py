"""``python -m rmq.namesrv``: run a standalone nameserver."""

import sys

from rmq.namesrv.cli import main

sys.exit(main())
