"""The HTTP face: an OpenAI-compatible proxy with memory, its own API, the inspector, MCP
and the command line. Reaches memory and the gate only through their front doors
(`mnemoproxy.memory`, `mnemoproxy.gate`).

    proxy/
    ├── app.py        create_app: routes, error handlers, the lifespan that owns resources
    ├── services.py   what the routes are given; open_memory
    ├── startup.py    what start-up says: where everything is, and its warnings
    ├── edge/         access and keys, ids, body deadlines, errors, metrics, OpenAPI, logs
    ├── relay/        the upstream client, relaying responses, the pass-through, SSE
    ├── chat/         POST /v1/chat/completions with memory, the memory tool
    ├── api/          the memory API and the management routes
    ├── inspector/    the web inspector at /ui
    ├── mcp/          memory over MCP
    └── cli/          the `mnemoproxy` command
"""
