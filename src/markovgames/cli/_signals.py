"""SIGTERM as an interruption, raised again where a handler's exception was swallowed (Ctrl-C too).

A command treats SIGTERM (``kill``, a scheduler's stop) as Ctrl-C: the handler raises
`Terminated`, a `KeyboardInterrupt`, so the command cleans up as after an interruption (an
interrupted run keeps its saved state and drops its partial files). Python runs a signal handler
between any two bytecodes of the main thread, also inside a finaliser (``__del__``, a weak
reference's callback, which the garbage collector runs, for instance while JAX compiles), and an
exception raised there is printed as "Exception ignored" and dropped: the command would go on as
if no signal had come. The handler therefore also records the signal, and `raise_if_terminated`,
called between chunks of work (the progress callbacks), raises it again.

The handler never raises where the exception would be dropped or would cross native code: inside
a finaliser (``__del__``, `weakref.finalize`), a garbage-collector callback (JAX's
``_xla_gc_callback`` runs on every collection), anything a collection runs (tracked by a callback
of our own, first in `gc.callbacks`), or an import (a native extension's initialisation calls
back into Python, and an exception there ends the process in C++). There it only records the signal, and the signal is delivered again to the main
thread a moment later (every 20 ms, on a timer thread), until the handler runs at a point where
its exception unwinds the command; `raise_if_terminated` raises it too. So Ctrl-C at any moment
prints no "Exception ignored ... KeyboardInterrupt" traceback, and is still answered at once.
"""

from __future__ import annotations

import gc
import signal
import threading

from .._waiting import set_poll_hook

__all__ = ["Terminated", "terminate_as_interrupt", "restore", "raise_if_terminated"]

_received = False
_interrupted = False
#: The signals recorded where the handler could not raise, not raised yet (delivered again).
_pending: set[int] = set()
#: The signals our timer sent again (a late one, after the exception was raised, is ignored).
_redelivered: set[int] = set()
#: Whether a garbage collection is running (finalisers and weak references' callbacks run in it).
_collecting = False
#: Seconds before a signal recorded in a finaliser is delivered again.
_REDELIVER_SECONDS = 0.02


class Terminated(KeyboardInterrupt):
    """SIGTERM, cleaned up after as Ctrl-C is, then reported with its own exit status (143)."""


def _track_collection(phase: str, info: dict) -> None:
    """A `gc.callbacks` entry, installed first: whether a collection is under way."""
    global _collecting
    _collecting = phase == "start"


def _unsafe(frame) -> bool:
    """Whether ``frame`` (where the main thread was when the signal came) is inside code whose
    exception Python drops: a collection, a finaliser, a collector's callback."""
    if _collecting:
        return True
    callbacks = {getattr(cb, "__code__", None) for cb in gc.callbacks}
    while frame is not None:
        code = frame.f_code
        if code.co_name == "__del__" or code in callbacks or code.co_filename.endswith("weakref.py"):
            return True
        # An import: a native extension's initialisation calls back into Python (nanobind, while
        # JAX's libraries load), and an exception raised there ends the process in C++
        # (std::terminate) or with a segmentation fault. The signal waits for the import to end.
        if code.co_filename.startswith("<frozen importlib"):
            return True
        frame = frame.f_back
    return False


def _deliver_again(signum: int) -> None:
    """Send ``signum`` to the main thread again shortly, while it is still pending."""
    main = threading.main_thread().ident

    def later() -> None:
        if signum in _pending and main is not None:
            _redelivered.add(signum)
            signal.pthread_kill(main, signum)

    timer = threading.Timer(_REDELIVER_SECONDS, later)
    timer.daemon = True
    timer.start()


def _raise_or_defer(signum: int, frame, error: type[KeyboardInterrupt]) -> None:
    if signum in _redelivered:
        _redelivered.discard(signum)
        if signum not in _pending:  # ours, arriving after the exception was raised: not a new signal
            return
    if _unsafe(frame):
        _pending.add(signum)
        _deliver_again(signum)
        return
    _pending.discard(signum)
    raise error


def _terminate(signum, frame):
    global _received
    if not (signum in _redelivered and signum not in _pending):
        _received = True
    _raise_or_defer(signum, frame, Terminated)


def _interrupt(signum, frame):
    # Ctrl-C, recorded like SIGTERM: a KeyboardInterrupt swallowed by a finaliser is raised again.
    global _interrupted
    if not (signum in _redelivered and signum not in _pending):
        _interrupted = True
    _raise_or_defer(signum, frame, KeyboardInterrupt)


def terminate_as_interrupt():
    """Install the SIGTERM and SIGINT handlers, and `raise_if_terminated` as the hook that runs
    while compiled code is awaited (`markovgames._waiting`); returns what they replaced (``None``
    off the main thread, where Python cannot install a handler)."""
    global _received, _interrupted
    if threading.current_thread() is not threading.main_thread():
        return None
    if signal.getsignal(signal.SIGINT) is not _interrupt:  # installed anew (not within console_main's)
        _received = _interrupted = False
        _pending.clear()
        _redelivered.clear()
    if _track_collection not in gc.callbacks:
        gc.callbacks.insert(0, _track_collection)
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
        if interrupt is not _interrupt:  # the outermost installation: nothing is pending beyond it
            _received = _interrupted = False
            _pending.clear()
            if _track_collection in gc.callbacks:
                gc.callbacks.remove(_track_collection)


def raise_if_terminated() -> None:
    """Raise `Terminated` if SIGTERM came since the handler was installed, `KeyboardInterrupt` if
    Ctrl-C did (its first exception may have been swallowed; see the module docstring)."""
    if _received:
        _pending.clear()
        raise Terminated
    if _interrupted:
        _pending.clear()
        raise KeyboardInterrupt
