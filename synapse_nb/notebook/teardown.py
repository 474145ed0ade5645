"""close_parts: unload's teardown of one kernel's parts, in order, bounded, whatever one part does."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from .kernel.runner import CANCEL_GRACE

if TYPE_CHECKING:
    from ..history.store import HistoryStore
    from ..mcp_client.hub import McpHub
    from .apps.views import AppViews
    from .kernel.runner import Runner
    from .models import Models
    from .recording.router import EventRouter
    from .recording.tape import TapeDeck
    from .recording.tracing import KernelTracing

__all__ = ["close_parts"]

logger = logging.getLogger("synapse_nb.notebook")


def close_parts(
    runner: Runner, deck: TapeDeck, apps: AppViews, hub: McpHub | None, models: Models, router: EventRouter,
    store: HistoryStore | None, tracer: KernelTracing,
) -> None:
    """Stop recording or replaying, close the Views, cancel background runs, close servers and providers, then
    the lake publisher, the history store and tracing (bounded).

    Called from a cell of a running kernel (`%unload_ext`), the loop cannot be waited on without a nested run
    (which would patch asyncio for good: notebook/kernel/runner.py), so the teardown is then a task that
    finishes right after the cell; elsewhere it is done when this returns.
    """
    deck.close()
    apps.close_all()

    async def close_services() -> None:
        if hub is not None:
            try:
                await hub.aclose()
            except Exception:  # teardown goes on whatever one part does
                logger.exception("closing the MCP hub failed")
        await models.aclose()

    def close_history() -> None:
        if router.lake_publisher is not None:
            router.lake_publisher.close()
            router.lake_publisher = None
        if store is not None:
            store.close()
        tracer.close()

    async def in_a_task() -> None:
        me = asyncio.current_task()
        pending = [t for t in runner.tasks if t is not me and not t.done()]
        if pending:
            await asyncio.wait(pending, timeout=CANCEL_GRACE)
        try:
            async with asyncio.timeout(30):
                await close_services()
        except BaseException:  # the store is closed whatever happened to the servers
            logger.exception("closing synapse_nb did not finish cleanly")
        close_history()

    if not runner.can_block:
        for task in runner.tasks:
            task.cancel()
        runner.spawn(in_a_task(), name="synapse_nb teardown")
        return
    runner.cancel_all()
    try:
        runner.run(close_services(), timeout=30)
    except BaseException:  # unload must finish even if closing is interrupted or times out
        logger.exception("closing synapse_nb did not finish cleanly")
    close_history()
