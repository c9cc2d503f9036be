"""Conversations and documents becoming memory.

    write/
    ├── pipeline.py    turns recorded as pending signals; sessions distilled and stored
    ├── reimport.py    a conversation sent again: the turns memory holds already
    ├── debounce.py    when a session is distilled
    ├── facts.py       what a new fact does to the known ones: merge, supersede, add
    ├── redact.py      credentials kept out of everything stored
    ├── pii.py         personal data replaced by placeholders (redact_pii)
    └── documents.py   documents cut into chunks along their structure
"""
