"""The web inspector at /ui: server-rendered pages over an agent's memory.

    inspector/
    ├── routes.py     the pages and forms
    └── templates/    their Jinja2 templates (HTML, autoescaped)
"""
