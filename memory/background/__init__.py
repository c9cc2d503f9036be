"""Work that runs beside the requests.

    background/
    ├── embedding_worker.py  facts, episodes and messages embedded as they are stored
    ├── helper_process.py    CPU-heavy work (rules, embeddings) in child processes
    ├── ownership.py         which of several processes does the background work
    ├── scrub.py             after forgets: the full-text indexes merged, at most once a minute
    └── consolidate.py       the pass that decays, merges, promotes, evicts and prunes
"""
