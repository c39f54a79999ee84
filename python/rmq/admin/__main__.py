"""``python -m rmq.admin``."""

import sys

from rmq.admin.cli import main

sys.exit(main())
