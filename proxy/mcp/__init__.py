"""Memory over MCP (the Model Context Protocol).

    mcp/
    ├── tools.py      the tools: search_memory, remember, forget, list_agents
    └── endpoint.py   /mcp over streamable HTTP, started on its first request
"""
