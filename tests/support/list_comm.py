"""A widget comm with no kernel behind it: what a widget publishes lands in a list, so in-process tests can
read the messages a browser view would receive (and wait for them)."""

from __future__ import annotations

import threading
from typing import Any

from comm.base_comm import BaseComm


class ListComm(BaseComm):  # type: ignore[misc]
    """A comm whose published messages land in `sent`; `arrived` is notified on each."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.sent: list[dict[str, Any]] = []
        self.arrived = threading.Condition()
        super().__init__(*args, **kwargs)

    def publish_msg(self, msg_type: str, data: Any = None, metadata: Any = None, buffers: Any = None,
                    **keys: Any) -> None:
        with self.arrived:
            self.sent.append({"msg_type": msg_type, "data": data})
            self.arrived.notify_all()
