"""The built-in `kernel` tool group as the inspector shows it: a server "kernel" served in process."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...types import ToolSpec

if TYPE_CHECKING:
    from .facade import StateLike

__all__ = ["KERNEL", "OFF_HINT", "BuiltinInfo", "kernel_group"]

KERNEL = "kernel"
OFF_HINT = "off: %%synapse --kernel or %config SynapseMagics.kernel_tools = True"


@dataclass(frozen=True, slots=True)
class BuiltinInfo:
    """What a server card needs to know of a built-in group (the fields card_html reads of a ServerInfo)."""

    name: str
    enabled: bool
    tool_count: int
    state: str = "built in"
    transport: str = "in process"

    @property
    def note(self) -> str:
        """The state in words: `built in`, or `built in (off: how to turn it on)`."""
        return self.state if self.enabled else f"{self.state} ({OFF_HINT})"


def kernel_group(state: StateLike) -> tuple[BuiltinInfo, list[ToolSpec]] | None:
    """The `kernel` group's card and tools, or None when the facade has none (no extension, or a server
    named "kernel" is connected, whose tools the inspector shows instead).

    Shown whether or not cells are offered it: calling its tools from the inspector is the user's own
    action (recorded as a manual call), and the card says how to offer them to the model. Its tools are
    registered here, so a form's Call finds them before the first `%%synapse` cell."""
    tools, registry = state.kernel, state.registry
    if tools is None or registry is None:
        return None
    if any(s.name == KERNEL for s in state.hub.servers):
        return None
    tools.install(registry)
    specs = [s for s in registry.grouped if s.server == KERNEL]
    return BuiltinInfo(KERNEL, state.kernel_tools(), len(specs)), specs
