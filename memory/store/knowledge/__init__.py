"""Store SQL for what memory knows and finding it.

    knowledge/
    ├── items.py        facts, episodes, entities, use counts
    ├── retrieval.py    full-text candidates, item fetches, embedding rows
    ├── documents.py    documents and their chunks
    └── procedures.py   procedures: the how-tos sessions taught
"""
