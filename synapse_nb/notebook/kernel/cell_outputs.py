"""What each cell has shown so far, so a command can end without leaving its emptied live line in the notebook.

A live output (output/live.py) starts as an empty display, is updated while its command runs, and is emptied when
the final rendering is shown below it: a frontend that saves the notebook (JupyterLab, nbclient) keeps it as an
empty output, one per `%mcp` command and `%%synapse` turn. Only a `clear_output` removes an output, and it removes
all of the cell's. So at the true end of a command (`tidy`, called by the magics once the command returned or
failed, never while a question may be asked), where the cell holds an emptied display, the cell is cleared and
what it showed is sent again in order: its printed text and its other displays as they stand now. That happens
under the lock every outgoing message of the kernel session takes (`Session.send` is wrapped here), so nothing
another thread sends comes between the clear and the outputs that replace it; `wait=True` makes the frontend
swap them without a flicker.

Left as it is: a cell that asked a question (JupyterLab keeps the answered prompt as an output, and it cannot be
sent again), a cell with a result or an error so far, and a cell that shows a widget (sending its display again
would build a second view of it, and an MCP Apps View would load its page again).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["CellOutputs", "Send"]

Send = Callable[[str, dict[str, Any], Any, bytes], None]
"""send(kind, content, parent, ident): one message on the kernel's IOPub channel, through its session."""

EMPTY_DATA = {"text/plain": ""}
"""The data of an emptied live output (output/live.py's EMPTY as sent)."""
WIDGET = "application/vnd.jupyter.widget-view+json"
FINAL = frozenset({"execute_result", "error", "input_request"})
"""Outputs that cannot be sent again as they were: a cell that has one is left alone."""
KEEP = 32
"""Cells remembered (a blocking command's cell is the newest)."""


@dataclass(slots=True)
class _Cell:
    """The outputs one cell has now, as a frontend holds them."""

    outputs: list[dict[str, Any]] = field(default_factory=list)  # {"stream": name, "text"} or a display's content
    fixed: bool = False  # asked a question, ended with a result or an error, or shows a widget: never cleared
    clear_next: bool = False  # a clear_output(wait=True) waits for the next output

    def add(self, output: dict[str, Any]) -> None:
        if self.clear_next:
            self.outputs.clear()
            self.clear_next = False
        if "stream" in output and self.outputs and self.outputs[-1].get("stream") == output["stream"]:
            self.outputs[-1] = {**self.outputs[-1], "text": self.outputs[-1]["text"] + output["text"]}
        else:
            self.outputs.append(output)


class CellOutputs:
    """Watches what a kernel session sends to each cell; `tidy()` clears an emptied live output away.

    `of(shell)` gives the one watcher of a kernel's session (a second one would wrap its `send` again).
    """

    @classmethod
    def of(cls, shell: Any, send: Send) -> CellOutputs | None:
        """The watcher of `shell`'s kernel session (made on first use); None where displays go through no session.
        `send(kind, content, parent, ident)` puts one message on the kernel's IOPub channel (the kernel port's)."""
        session = getattr(getattr(shell, "display_pub", None), "session", None)
        if session is None:
            return None
        watcher = getattr(session, "_synapse_cell_outputs", None)
        if not isinstance(watcher, cls):
            watcher = cls(shell, send)
            session._synapse_cell_outputs = watcher
        return watcher

    def __init__(self, shell: Any, send: Send) -> None:
        self.shell = shell
        self._iopub = send
        self._lock = threading.RLock()
        self._cells: OrderedDict[str, _Cell] = OrderedDict()  # by the msg_id of the cell's execute_request
        session = shell.display_pub.session
        self._send: Callable[..., Any] = session.send

        def watched_send(stream: Any, msg_or_type: Any, content: Any = None, parent: Any = None,
                         *args: Any, **kwargs: Any) -> Any:
            with self._lock:
                try:
                    self._note(msg_or_type, content, parent)
                except Exception:  # watching must never stop a message
                    pass
                return self._send(stream, msg_or_type, content, parent, *args, **kwargs)

        session.send = watched_send

    # -- watching

    def _note(self, msg_or_type: Any, content: Any, parent: Any) -> None:
        if isinstance(msg_or_type, dict):
            kind, content, parent = msg_or_type["header"]["msg_type"], msg_or_type["content"], \
                msg_or_type.get("parent_header")
        else:
            kind = msg_or_type
        if kind not in FINAL and kind not in ("stream", "display_data", "update_display_data", "clear_output"):
            return
        content = content or {}
        display_id = (content.get("transient") or {}).get("display_id")
        if kind == "update_display_data":  # applies wherever that display is shown, in any cell
            for shown_in in self._cells.values():
                for i, shown in enumerate(shown_in.outputs):
                    if display_id is not None and (shown.get("transient") or {}).get("display_id") == display_id:
                        shown_in.outputs[i] = {**shown, "data": content.get("data", {}),
                                               "metadata": content.get("metadata", {})}
            return
        msg_id = _msg_id(parent)
        if msg_id is None:
            return
        cell = self._cells.get(msg_id)
        if cell is None:
            cell = self._cells[msg_id] = _Cell()
            while len(self._cells) > KEEP:
                self._cells.popitem(last=False)
        if kind in FINAL:
            cell.fixed = True
        elif kind == "clear_output":
            if content.get("wait"):
                cell.clear_next = True
            else:
                cell.outputs.clear()
                cell.clear_next = False
        elif kind == "stream":
            cell.add({"stream": content.get("name", "stdout"), "text": content.get("text", "")})
        else:
            if WIDGET in (content.get("data") or {}):
                cell.fixed = True
            cell.add(dict(content))

    # -- tidying

    def tidy(self) -> bool:
        """At the end of a command: clear the running cell and show again what it shows now, less its emptied
        displays, when it has one and nothing that cannot be sent again (module docstring); True when it did.

        What the cell printed must have been handed to the session first (the kernel port queues the streams'
        pending text before it calls this), or it would be cleared with the rest."""
        pub = self.shell.display_pub
        parent = pub.parent_header
        msg_id = _msg_id(parent)
        with self._lock:
            cell = self._cells.get(msg_id) if msg_id is not None else None
            if cell is None or cell.fixed or cell.clear_next:
                return False
            kept = [o for o in cell.outputs if "stream" in o or o.get("data") != EMPTY_DATA]
            if len(kept) == len(cell.outputs):
                return False
            self._iopub("clear_output", {"wait": bool(kept)}, parent, pub.topic)
            for output in kept:
                if "stream" in output:
                    self._iopub("stream", {"name": output["stream"], "text": output["text"]}, parent,
                                f"stream.{output['stream']}".encode())
                else:
                    self._iopub("display_data", output, parent, pub.topic)
            return True


def _msg_id(parent: Any) -> str | None:
    """The msg_id of a parent header (a message dict or its header)."""
    if not isinstance(parent, dict):
        return None
    header = parent.get("header", parent)
    msg_id = header.get("msg_id") if isinstance(header, dict) else None
    return msg_id if isinstance(msg_id, str) else None
