"""SIGTERM as an interruption, raised again where a handler's exception was swallowed (Ctrl-C too).

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

from .._waiting import set_poll_hook

__all__ = ["Terminated", "terminate_as_interrupt", "restore", "raise_if_terminated"]

_received = False
_interrupted = False


class Terminated(KeyboardInterrupt):
    """SIGTERM, cleaned up after as Ctrl-C is, then reported with its own exit status (143)."""


def _terminate(signum, frame):
    global _received
    _received = True
    raise Terminated


def _interrupt(signum, frame):
    # Ctrl-C, recorded like SIGTERM: a KeyboardInterrupt swallowed by a finaliser is raised again.
    global _interrupted
    _interrupted = True
    raise KeyboardInterrupt


def terminate_as_interrupt():
    """Install the SIGTERM and SIGINT handlers, and `raise_if_terminated` as the hook that runs
    while compiled code is awaited (`markovgames._waiting`); returns what they replaced (``None``
    off the main thread, where Python cannot install a handler)."""
    global _received, _interrupted
    if threading.current_thread() is not threading.main_thread():
        return None
    _received = _interrupted = False
    previous_hook = set_poll_hook(raise_if_terminated)
    previous_int = signal.signal(signal.SIGINT, _interrupt)
    return signal.signal(signal.SIGTERM, _terminate) or signal.SIG_DFL, previous_int, previous_hook


def restore(previous) -> None:
    """Put back what `terminate_as_interrupt` replaced (nothing if it installed nothing)."""
    global _received, _interrupted
    if previous is not None:
        term, interrupt, hook = previous
        signal.signal(signal.SIGTERM, term)
        signal.signal(signal.SIGINT, interrupt if interrupt is not None else signal.default_int_handler)
        set_poll_hook(hook)
        _received = _interrupted = False


def raise_if_terminated() -> None:
    """Raise `Terminated` if SIGTERM came since the handler was installed, `KeyboardInterrupt` if
    Ctrl-C did (its first exception may have been swallowed; see the module docstring)."""
    if _received:
        raise Terminated
    if _interrupted:
        raise KeyboardInterrupt
