"""Native calls that cannot check for signals themselves, made interruptible.

Most native loops ask Python for pending signals every 50 ms (crates/tlblab-python/src/watch.rs).
A few do not (the probe's timed measurements, whose loops must not take the GIL mid-timing):
`call` runs such a function on a daemon thread while the main thread waits, so Ctrl-C or SIGTERM
raises in the main thread within a fraction of a second and the command exits; the abandoned
native work ends with the process. Only for calls whose results are written afterwards, by
the caller: an abandoned call leaves nothing behind.
"""

from __future__ import annotations

import threading
from typing import Any, Callable


def call(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """`fn(*args, **kwargs)`, its result or its exception; a signal's exception (KeyboardInterrupt)
    raises here as soon as the main thread's handler runs."""
    if threading.current_thread() is not threading.main_thread():
        return fn(*args, **kwargs)  # signals are delivered to the main thread only: nothing to gain
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = fn(*args, **kwargs)
        except BaseException as e:  # handed to the caller, in the main thread
            box["error"] = e

    t = threading.Thread(target=target, name=f"tlblab-{getattr(fn, '__name__', 'native')}", daemon=True)
    t.start()
    while t.is_alive():
        # A lock wait is interrupted by a signal on POSIX (the handler runs at once); the
        # timeout only bounds a wait on a platform where it is not. Rare wake-ups: the thread
        # may be timing a TLB on the other core.
        t.join(1.0)
    if "error" in box:
        raise box["error"]
    return box["value"]
