"""Finding what memory holds: the one hybrid search behind the planner, the API and MCP.

    search/
    ├── hybrid.py        BM25 + vectors, blended and lifted (search(), SearchResult)
    ├── vectors.py       one usearch index per agent, derived from the store
    ├── query_terms.py   free text into a safe full-text query, within a match budget
    ├── common_terms.py  words most of an agent's memory says (they tell nothing apart)
    └── periods.py       the period a question names ("last weekend", "on May 3, 2023")
"""
