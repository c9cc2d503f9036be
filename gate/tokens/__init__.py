"""Exact o200k_base token counts (OpenAI's encoding) for the memory budget.

    tokens/
    ├── counter.py          count_tokens: the counter the rest of the gate uses
    ├── o200k.py            the counter itself: tiktoken's ranks, pattern and merge rule
    ├── bpe.py              byte-pair merges of one piece, counted
    └── unicode_classes.py  the Unicode classes the pre-tokenizer pattern names (generated)
"""
