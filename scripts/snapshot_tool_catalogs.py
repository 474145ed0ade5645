"""Write the tool catalogs of the ten real servers of the tool search's eval (tests/support/catalog_servers.py)
to tests/agent/tool_search_eval/catalogs/SERVER.json, from the live servers: run it after `make tools` when a
pinned server's version changes (tests/agent/test_tool_catalogs_live.py fails until the snapshots match again).

    .venv/bin/python scripts/snapshot_tool_catalogs.py
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.support.catalog_servers import CATALOGS, SERVERS, catalog_of, connected, server_entries


async def write(entries: dict[str, dict[str, object]], scratch: Path) -> None:
    async with connected(entries) as hub:
        CATALOGS.mkdir(parents=True, exist_ok=True)
        for name in SERVERS:
            catalog = catalog_of(hub, name, scratch)
            text = json.dumps(catalog, indent=1, ensure_ascii=False, sort_keys=True) + "\n"
            (CATALOGS / f"{name}.json").write_text(text, encoding="utf-8")
            print(f"{name}: {len(catalog['tools'])} tools")


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="synapse-catalogs-") as scratch, server_entries(Path(scratch)) as entries:
        asyncio.run(write(entries, Path(scratch)))


if __name__ == "__main__":
    main()
