"""The web inspector at /ui: server-rendered pages over an agent's memory.

    inspector/
    ├── routes.py     signing in, the forms that change memory, errors as pages, the router
    ├── views.py      the pages that show memory: agents, an agent's tabs, a fact, a session,
    │                 a document, search, the preview
    ├── explain.py    why search found a result, in words
    ├── removals.py   deleting and forgetting, each behind a page saying what goes and stays
    ├── pages.py      what every page shares: templates, headers, notices, names
    └── templates/    their Jinja2 templates (HTML, autoescaped)
"""
