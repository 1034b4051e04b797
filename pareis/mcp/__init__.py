"""The read-only Pareis MCP server (``pareis mcp``): the answers layer as MCP tools and a resource (DESIGN §4, §6)."""
