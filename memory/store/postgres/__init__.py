"""The store on PostgreSQL (store_url): the same statements, another server.

    postgres/
    ├── connections.py  connections, SQLite's dialect translated, the owner lock
    ├── schema.py       PostgreSQL's migrations
    └── search.py       full-text ranking: ts_rank_cd with BM25's IDF
"""
