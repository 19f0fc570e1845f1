"""`python -m coop_engine.cli`: the same as the `coop` command."""

import sys

from coop_engine.cli.main import main

sys.exit(main())
