"""Waiting on compiled code without deafening the main thread to signals.

Python runs a signal handler (Ctrl-C's `KeyboardInterrupt`, the command line's SIGTERM) only in
the main thread, between two bytecodes. A call into XLA that compiles a loop or waits for a
compiled chunk can take seconds or minutes (a large game, a slow learner), and while it runs no
handler runs: Ctrl-C waited for the chunk to end. `in_background` runs such a call on a helper
thread and waits for it in the main thread, in short waits that a signal interrupts; the handler's
exception then unwinds the caller as usual (its clean-up runs at once) while the abandoned call
finishes on its own thread. Between waits, `set_poll_hook`'s hook runs (the command line raises
there a SIGTERM whose exception a finaliser swallowed).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["in_background", "set_poll_hook"]

_T = TypeVar("_T")

#: Seconds between two checks of the hook while waiting.
POLL_SECONDS = 0.05

_hook: Callable[[], None] | None = None


def set_poll_hook(hook: Callable[[], None] | None) -> Callable[[], None] | None:
    """Call ``hook()`` between waits (it may raise to stop waiting); returns the hook it replaced."""
    global _hook
    previous, _hook = _hook, hook
    return previous


def in_background(fn: Callable[..., _T], *args: Any, **kwargs: Any) -> _T:
    """``fn(*args, **kwargs)``, run on a helper thread while this one waits, interruptibly.

    Its result is returned and its exception raised here. Off the main thread (where no signal
    handler runs anyway) ``fn`` is simply called.
    """
    if threading.current_thread() is not threading.main_thread():
        return fn(*args, **kwargs)
    outcome: dict[str, Any] = {}

    def target() -> None:
        try:
            outcome["value"] = fn(*args, **kwargs)
        except BaseException as err:  # noqa: BLE001 - handed to the waiting thread as it is
            outcome["error"] = err

    thread = threading.Thread(target=target, name="markovgames-wait", daemon=True)
    thread.start()
    while thread.is_alive():
        thread.join(POLL_SECONDS)
        if _hook is not None:
            _hook()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]
