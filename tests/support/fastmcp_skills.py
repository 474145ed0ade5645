"""A fastmcp (PyPI) server that serves a folder of skills the documented way (SkillsDirectoryProvider with
`experimental_skills=True`, and the SEP-2640 SkillsExtension: `skills/list`, `skills/get`, each file a `skill://`
resource); run by the fastmcp venv under .tools (make fastmcp):

    python fastmcp_skills.py ROOT            # stdio
    python fastmcp_skills.py ROOT http PORT  # streamable HTTP on 127.0.0.1:PORT/mcp
"""

from __future__ import annotations

import sys
from pathlib import Path

from fastmcp import FastMCP
from fastmcp.server.providers.skills import SkillsDirectoryProvider
from fastmcp.skills.extension import SkillsExtension

root = Path(sys.argv[1])
mcp = FastMCP("skills")
provider = SkillsDirectoryProvider(root, experimental_skills=True)
mcp.add_provider(provider)
mcp.add_extension(SkillsExtension(providers=[provider]))

if __name__ == "__main__":
    if sys.argv[2:3] == ["http"]:
        mcp.run(transport="http", host="127.0.0.1", port=int(sys.argv[3]), show_banner=False)
    else:
        mcp.run(show_banner=False)
