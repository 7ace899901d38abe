"""``python -m mtserve.cli``: the same as the ``mtserve`` command."""

import sys

from mtserve.cli import main

sys.exit(main())
