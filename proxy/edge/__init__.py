"""The edge: what every request meets before and after its route.

    edge/
    ├── access.py         who may reach the proxy and what each caller may touch (the guard)
    ├── keys.py           client and admin keys, kept as hashes in keys_file
    ├── sessions.py       the inspector's sign-in sessions (its own secret, expiry, sign-out)
    ├── ids.py            agent and session ids, whichever door they come through
    ├── body_deadline.py  a deadline on receiving a request's body
    ├── json_body.py      JSON bodies decoded one way, nested at most 100 deep
    ├── errors.py         the error tree as HTTP statuses, every body in OpenAI's shape
    ├── metrics.py        Prometheus metrics (GET /metrics)
    ├── openapi.py        the OpenAPI schema's descriptions
    └── logs.py           text or JSON log lines
"""
