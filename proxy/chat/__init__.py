"""POST /v1/chat/completions with memory.

    chat/
    ├── route.py          the route: validate, let memory prepare the request, relay, remember
    ├── memory.py         memory as the route sees it: read before forwarding, record after
    ├── conversation.py   what a request's messages say: its turns and its session
    ├── memory_tool.py    the search_memory tool offered to the model (memory_tool = true)
    └── tool_stream.py    a streamed reply read round by round for the memory tool
"""
