"""How results reach the cell: the live output, `%mcp call` blocks, tables found in results, listings, colours."""
