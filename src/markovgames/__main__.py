"""``python -m markovgames`` runs the command-line interface."""

import sys

try:
    from .cli import console_main
except KeyboardInterrupt:
    # Ctrl-C while Python imports the command line: the line and exit status of an interrupted
    # command, not a traceback (console_main answers the same way once it runs).
    print("markovgames: interrupted", file=sys.stderr)
    raise SystemExit(130) from None

console_main()
