"""The proxy's own JSON routes: the memory API and the management of an agent's memory.

    api/
    ├── memory.py       /memory/ingest, search, preview, consolidate, dead-letters/retry
    ├── agents.py       /agents: facts, sessions, episodes, export, import, forget
    ├── documents.py    /agents/{id}/documents: the knowledge base
    ├── uploads.py      uploads per key at a time, multipart bodies read off the system's /tmp
    ├── procedures.py   /agents/{id}/procedures: the how-tos sessions taught
    └── models.py       the answers' msgspec structs (also the OpenAPI schema's models)
"""
