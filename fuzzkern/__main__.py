"""``python -m fuzzkern``: the same as the ``fuzzkern`` command."""

from fuzzkern.cli import main

main()
