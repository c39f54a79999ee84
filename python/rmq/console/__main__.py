"""``python -m rmq.console``: run the web console."""

import sys

from rmq.console.cli import main

sys.exit(main())
