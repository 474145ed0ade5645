"""A cell output updated in place while something runs, that ends as one plain, final output.

Live updates use an IPython display handle (`update_display_data`). When a blocking run ends, the
final rendering is displayed once more as an ordinary output: a saved notebook then holds the same
outputs whether the tool that executed it applied display updates (nbclient, JupyterLab) or not (nbval,
which sees only the first version of an updated output). The live output itself, empty in its first
version, is then withdrawn with `clear_output` where it is the cell's only output so far (`withdraw`, from
the kernel port: never where the cell printed or showed anything else); elsewhere it is emptied, and a
saved notebook keeps it as an empty output. Background runs keep the final state in the live output, as
the cell that started them is long done.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["EMPTY", "Bundle", "LiveOutput", "Publisher", "Withdraw"]

Bundle = dict[str, Any]
EMPTY: Bundle = {"text/plain": ""}

Publisher = Callable[[Bundle, "str | None", bool], None]
"""publish(bundle, display_id, update): sends one display_data (or update_display_data) message."""

Withdraw = Callable[[str, bool], bool]
"""withdraw(display_id, wait): clears the cell's outputs (`wait`: once the next one comes) if that display's is
the only one; True when it did."""


def ipython_publisher(bundle: Bundle, display_id: str | None, update: bool) -> None:
    """Publish through IPython's display machinery (the kernel's iopub channel, or the terminal)."""
    from IPython.display import display

    if display_id is None:
        display(bundle, raw=True)  # type: ignore[no-untyped-call]
    else:
        display(bundle, raw=True, display_id=display_id, update=update)  # type: ignore[no-untyped-call]


class LiveOutput:
    """One output area: `start`, any number of `update`s, then `finish` (see the module docstring).

    `live=False` (terminal IPython, plain frontends that print every update) shows only the final
    rendering; `keep=True` (background runs) leaves the final rendering in the live output; `withdraw`
    (the kernel port's) removes the live output at the end where it is the cell's only one.
    """

    def __init__(self, *, live: bool = True, keep: bool = False, publish: Publisher = ipython_publisher,
                 withdraw: Withdraw | None = None) -> None:
        self.live = live
        self.keep = keep
        self._publish = publish
        self._withdraw = withdraw
        self._id: str | None = None
        self._shown: Bundle | None = None  # the last bundle published to the live output
        self.finished = False

    @property
    def publisher(self) -> Publisher:
        """How this output sends its messages (something shown beside it goes the same way)."""
        return self._publish

    def successor(self) -> LiveOutput:
        """A new output below this one, shown the same way (a turn cut at a View goes on in it)."""
        return LiveOutput(live=self.live, keep=self.keep, publish=self._publish, withdraw=self._withdraw)

    def start(self, bundle: Bundle | None = None) -> None:
        if not self.live:
            return
        if self._id is not None:  # started already (a placeholder shown early): the same output goes on
            if bundle is not None:
                self.update(bundle)
            return
        import uuid

        self._id = uuid.uuid4().hex
        first = bundle if (bundle is not None and self.keep) else EMPTY
        self._publish(first, self._id, False)
        self._shown = first
        if bundle is not None and not self.keep:
            self.update(bundle)

    def update(self, bundle: Bundle) -> None:
        # Nothing twice: every update is a message for the kernel to send and the frontend to render.
        if self._id is not None and not self.finished and bundle != self._shown:
            self._publish(bundle, self._id, True)
            self._shown = bundle

    def clear(self) -> None:
        """End with nothing shown (the command returns what it shows, e.g. `%mcp call`'s Out[])."""
        # Withdrawn once the next output comes (what the command returns, or shows next), in order with it:
        # a clear at once could reach the frontend after a question's input box and clear that away.
        if self._id is not None and not self.finished and not self._withdrawn(wait=True) and self._shown != EMPTY:
            self._publish(EMPTY, self._id, True)
        self.finished = True

    def finish(self, bundle: Bundle) -> None:
        if self.finished:
            return
        if self._id is not None and self.keep:
            self._publish(bundle, self._id, True)
        else:
            # Withdrawn: the live line stays until the final rendering replaces it (no flicker in the frontend).
            if self._id is not None and not self._withdrawn(wait=True) and self._shown != EMPTY:
                self._publish(EMPTY, self._id, True)
            self._publish(bundle, None, False)
        self.finished = True

    def _withdrawn(self, *, wait: bool) -> bool:
        """Whether the live output was cleared away (it was the cell's only output; see the module docstring)."""
        return self._id is not None and self._withdraw is not None and self._withdraw(self._id, wait)
