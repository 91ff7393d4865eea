"""``python -m wholetrace ...`` runs the ``wholetrace`` command."""

import sys

from wholetrace.cli import main

if __name__ == "__main__":
    sys.exit(main())
