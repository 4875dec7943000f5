"""``python -m markovgames`` runs the command-line interface."""

import signal
import sys

# Ctrl-C and SIGTERM are held (blocked, not lost) until the command line has installed its
# handlers (`console_main` unblocks them): a signal during the imports is then answered like any
# other, with one line and the exit status, never a traceback.
if hasattr(signal, "pthread_sigmask"):
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})

try:
    from .cli import console_main
except KeyboardInterrupt:  # where signals cannot be blocked
    print("markovgames: interrupted", file=sys.stderr)
    raise SystemExit(130) from None

console_main()
