"""The `mnemoproxy` command.

    cli/
    ├── main.py             the parser, `serve` and `keys`
    ├── memory_commands.py  agents, show, search, forget, export, import, import-docs, ...
    ├── chat_imports.py     chat histories from elsewhere (ChatGPT's export, JSON Lines)
    └── workers.py          `workers > 1`: several processes serving one port
"""
