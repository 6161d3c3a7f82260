"""``python -m cli``: the ``fastmice`` command."""

import sys

from cli.launch import main

sys.exit(main())
