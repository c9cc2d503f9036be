"""The core model: the model server memory calls for distillation and the LLM gate.

    core_model/
    ├── client.py     the JSON client memory is lent, and CoreModel on top of it
    ├── budget.py     its tokens, counted by purpose and capped per UTC day
    ├── breaker.py    stop calling a server that keeps failing
    └── fallback.py   the rule distiller once the day's tokens are spent
"""
