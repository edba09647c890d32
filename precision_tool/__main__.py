"""``python -m precision_tool`` = the ``precision_tool`` console script."""
import sys

from precision_tool.cli import main

sys.exit(main())
