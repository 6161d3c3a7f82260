"""``python -m cli``: the ``fastmice`` command."""

import sys

from cli.main import main

sys.exit(main())
