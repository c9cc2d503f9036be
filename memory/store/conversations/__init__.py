"""Store SQL for what was said and what became of it.

    conversations/
    ├── turns.py          transcript messages and pending signals
    ├── sessions.py       agents, sessions and the processing log
    ├── distillations.py  one session's distillation, in one transaction
    └── threads.py        long threads' running summaries
"""
