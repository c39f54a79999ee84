"""``rmq`` console script and ``python -m rmq.admin``: the mqadmin-style admin tool.

No sub-commands exist in this build yet; this entry point says so instead of pretending.
"""

from __future__ import annotations

import sys

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``rmq`` console script. Returns the exit status."""
    del argv
    print("rmq admin: no sub-commands are available in this build yet", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
