"""SIGTERM as an interruption, raised again where a handler's exception was swallowed.

A command treats SIGTERM (``kill``, a scheduler's stop) as Ctrl-C: the handler raises
`Terminated`, a `KeyboardInterrupt`, so the command cleans up as after an interruption (an
interrupted run keeps its saved state and drops its partial files). Python runs a signal handler
between any two bytecodes of the main thread, also inside a finaliser (``__del__``, a weak
reference's callback, which the garbage collector runs, for instance while JAX compiles), and an
exception raised there is printed as "Exception ignored" and dropped: the command would go on as
if no signal had come. The handler therefore also records the signal, and `raise_if_terminated`,
called between chunks of work (the progress callbacks), raises it again.
"""

from __future__ import annotations

import signal
import threading

__all__ = ["Terminated", "terminate_as_interrupt", "restore", "raise_if_terminated"]

_received = False


class Terminated(KeyboardInterrupt):
    """SIGTERM, cleaned up after as Ctrl-C is, then reported with its own exit status (143)."""


def _interrupt(signum, frame):
    global _received
    _received = True
    raise Terminated


def terminate_as_interrupt():
    """Install the SIGTERM handler; returns the handler it replaced (``None`` off the main
    thread, where Python cannot install one)."""
    global _received
    if threading.current_thread() is not threading.main_thread():
        return None
    _received = False
    return signal.signal(signal.SIGTERM, _interrupt) or signal.SIG_DFL


def restore(previous) -> None:
    """Put back the handler `terminate_as_interrupt` replaced (nothing if it installed none)."""
    global _received
    if previous is not None:
        signal.signal(signal.SIGTERM, previous)
        _received = False


def raise_if_terminated() -> None:
    """Raise `Terminated` if SIGTERM came since the handler was installed (its first exception
    may have been swallowed; see the module docstring)."""
    if _received:
        raise Terminated
