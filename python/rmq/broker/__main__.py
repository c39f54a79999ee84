"""``python -m rmq.broker``."""

import sys

from rmq.broker.cli import main

sys.exit(main())
