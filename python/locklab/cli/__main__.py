"""`python -m locklab.cli`: the `locklab` command."""
import sys

from .main import main

sys.exit(main())
