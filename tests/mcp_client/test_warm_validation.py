"""Connecting a server whose tools declare output schemas warms the SDK's result validation off the loop."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def test_jsonschema_is_imported_in_the_background_after_connect() -> None:
    code = textwrap.dedent(
        """
        import asyncio, sys, threading
        from synapse_nb.mcp_client.hub import McpHub

        async def main():
            async with McpHub() as hub:
                before = "jsonschema" in sys.modules
                await hub.connect("demo", command=sys.executable, args=["-m", "synapse_nb.mcp_client.demo_server"])
                warm = [t for t in threading.enumerate() if t.name == "synapse-warm-jsonschema"]
                for t in warm:
                    t.join(60)
                print(before, len(warm), "jsonschema" in sys.modules)

        asyncio.run(main())
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.split() == ["False", "1", "True"]
