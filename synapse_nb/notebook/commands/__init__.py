"""One plain, typed function per magic subcommand: ask (%%synapse), session (%synapse ...), mcp (%mcp ...)."""
