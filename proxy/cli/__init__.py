"""The `mnemoproxy` command.

    cli/
    ├── main.py             the parser, `serve` and `keys`
    ├── memory_commands.py  agents, show, search, forget, export, import, import-docs, ...
    ├── chat_imports.py     chat histories from elsewhere (ChatGPT's export, JSON Lines)
    ├── output.py           text for people or JSON for scripts; progress bars
    ├── failures.py         a message and an exit code for every mistake, never a traceback
    └── workers.py          `workers > 1`: several processes serving one port
"""
