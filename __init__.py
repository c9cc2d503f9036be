"""mnemoproxy: an OpenAI-compatible memory proxy.

    mnemoproxy.proxy   the HTTP face (Litestar app, chat route, upstream client, memory API, CLI)
    mnemoproxy.gate    the read path (relevance gate, planner, memory block, injection)
    mnemoproxy.memory  the store and the write path (SQLite, vectors, distillers, consolidation)
    mnemoproxy.config  the settings table
    mnemoproxy.errors  the exception tree every layer raises

Dependencies point one way: proxy -> gate -> memory -> config (tests/house/test_house_layering.py).
"""

__version__ = "0.1.0"
