"""Which outputs each cell has sent, so a live output that is a cell's only one can leave no trace behind.

A live output (output/live.py) starts as an empty display and is updated while its command runs; a frontend
that saves the notebook (JupyterLab, nbclient) keeps that first output, emptied, beside the final rendering. A
`clear_output` removes it, but also everything else the cell showed: it is sent only where the live output is
the cell's only output so far. `CellOutputs` watches the kernel session's messages to know that: every output
(stream, display, result, error) goes through `Session.send`, whichever thread sends it (ipykernel's IOPub
thread sends what the cell printed). The check and the `clear_output` happen under the lock every message
takes on its way out, so nothing another thread sends comes between them; what the cell prints afterwards
arrives after the clear and stays.
"""

from __future__ import annotations

import sys
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

__all__ = ["CellOutputs"]

# input_request: an answered question stays in the cell (JupyterLab keeps the prompt and the answer as an output)
OUTPUTS = frozenset({"stream", "display_data", "update_display_data", "execute_result", "error", "input_request"})
KEEP = 64  # cells and live outputs remembered: a blocking command's are among the last few


class CellOutputs:
    """Watches the outputs sent through `shell`'s kernel session; `withdraw` clears a live output that is alone.

    `of(shell)` gives the one watcher of a kernel's session (a second one would wrap its `send` again).
    """

    @classmethod
    def of(cls, shell: Any, clear: Callable[[bool], None]) -> CellOutputs | None:
        """The watcher of `shell`'s kernel session (made on first use); None where displays do not go through one.
        `clear(wait)` sends a `clear_output` to the cell the kernel runs now (the kernel port's)."""
        session = getattr(getattr(shell, "display_pub", None), "session", None)
        if session is None:
            return None
        watcher = getattr(session, "_synapse_cell_outputs", None)
        if not isinstance(watcher, cls):
            watcher = cls(shell, clear)
            session._synapse_cell_outputs = watcher
        return watcher

    def __init__(self, shell: Any, clear: Callable[[bool], None]) -> None:
        self.shell = shell
        self._clear = clear
        self._lock = threading.RLock()
        self._owners: OrderedDict[str, set[str | None]] = OrderedDict()  # cell (parent msg_id) -> who showed
        self._cell_of: OrderedDict[str, str] = OrderedDict()  # display_id -> the cell its first display went to
        session = shell.display_pub.session
        send = session.send

        def watched_send(stream: Any, msg_or_type: Any, content: Any = None, parent: Any = None,
                         *args: Any, **kwargs: Any) -> Any:
            with self._lock:
                self._note(msg_or_type, content, parent)
                return send(stream, msg_or_type, content, parent, *args, **kwargs)

        session.send = watched_send

    def _note(self, msg_or_type: Any, content: Any, parent: Any) -> None:
        if isinstance(msg_or_type, dict):
            kind, content, parent = msg_or_type["header"]["msg_type"], msg_or_type["content"], \
                msg_or_type.get("parent_header")
        else:
            kind = msg_or_type
        if kind not in OUTPUTS:
            return
        cell = ((parent or {}).get("header", parent) or {}).get("msg_id")
        if not isinstance(cell, str):
            return
        display_id = ((content or {}).get("transient") or {}).get("display_id") if kind != "stream" else None
        if kind == "display_data" and display_id is not None:
            self._cell_of.setdefault(display_id, cell)
            while len(self._cell_of) > KEEP:
                self._cell_of.popitem(last=False)
        self._owners.setdefault(cell, set()).add(display_id)
        self._owners.move_to_end(cell)
        while len(self._owners) > KEEP:
            self._owners.popitem(last=False)

    def withdraw(self, display_id: str, wait: bool) -> bool:
        """Clear the cell's outputs if `display_id`'s is the only one it has sent (`wait`: once the next output
        comes, as a frontend applies `clear_output(wait=True)`); True when the clear was sent."""
        for stream in (sys.stdout, sys.stderr):  # what the cell printed so far counts (not under the lock:
            flush = getattr(stream, "_flush", None)  # the IOPub thread takes it to send the text)
            if callable(flush):
                flush()
        pub = self.shell.display_pub
        parent = getattr(pub, "parent_header", None) or {}
        cell = (parent.get("header", parent) or {}).get("msg_id")
        with self._lock:
            if cell is None or self._cell_of.get(display_id) != cell or self._owners.get(cell) != {display_id}:
                return False
            self._clear(wait)
            self._owners[cell] = set()
            return True
