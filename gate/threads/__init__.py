"""Long threads (`context_budget_tokens`): a chat request whose history exceeds the budget
has its oldest turns replaced by a running summary, kept per session and reused.

    threads/
    ├── compressor.py   ThreadCompressor: what to cut, and the summary kept and reused
    ├── thread.py       a thread's messages counted in tokens, and where it may be cut
    └── summaries.py    the lines of a summary: extractive, or the core model's input
"""
