"""Distillation: a session's turns into an episode, facts and procedures.

    distill/
    ├── protocol.py   the Distiller contract
    ├── llm.py        the core model's distiller: a Jinja2 prompt, JSON back
    ├── prompts/      its templates
    ├── parse.py      the core model's answer read robustly (raw, fenced, braces)
    ├── grounding.py  what the model wrote, checked against what the user said
    └── rules/        the offline distiller: spaCy patterns over a blank English pipeline
"""
