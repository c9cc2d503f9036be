"""Store SQL for looking at memory, fixing it, carrying it and keeping it lean.

    management/
    ├── browse.py       pages of sessions, facts and episodes; edits by hand
    ├── retract.py      a fact deleted or edited by hand: its lines no longer served
    ├── forget.py       forgetting an agent or a session completely
    ├── portable.py     export and import as JSON Lines records
    └── maintenance.py  consolidation's promotions, evictions and merges
"""
