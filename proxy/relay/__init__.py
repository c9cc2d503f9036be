"""Relaying to and from the upstream model server.

    relay/
    ├── upstream.py     the one module that speaks HTTP to model servers (pooled client)
    ├── probe.py        whether the upstream can be reached (start-up, /health)
    ├── responses.py    one upstream response back to the client, whole or streamed, with a tee
    ├── passthrough.py  requests memory has no part in, relayed below Litestar's routing
    └── sse.py          the assistant's reply reassembled from a copy of what was relayed
"""
