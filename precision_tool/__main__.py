"""``python -m precision_tool`` = the ``precision_tool`` console script."""
from precision_tool.cli import console_main

console_main()
