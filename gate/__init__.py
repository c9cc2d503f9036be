"""The gate's front door: the read path of a chat request (relevance gate, planner, memory
block, injection) and the compression of long threads, built from settings over memory's
front door. proxy/ imports from here and nothing deeper.

    gate/
    ├── read_path.py   ReadPath: gate -> planner -> injection, one search shared
    ├── relevance/     the gate: which memory, if any, a message deserves
    ├── planner.py     the block under the token budget, rendered
    ├── excerpt.py     the sentences of a long message that answer the question
    ├── fence.py       the fence around memory, and what reads like instructions
    ├── inject.py      the block into the request's messages
    ├── messages.py    reading OpenAI chat messages
    ├── threads/       long threads replaced by a running summary
    ├── tokens/        exact o200k_base token counts
    └── templates/     the memory block and the summary prompts
"""

from mnemoproxy.gate.fence import looks_like_instructions
from mnemoproxy.gate.messages import latest_user_index, message_text
from mnemoproxy.gate.read_path import MemoryReader, ReadPath, ReadResult, memory_headers
from mnemoproxy.gate.relevance.types import SECTIONS
from mnemoproxy.gate.threads.compressor import Compression, ThreadCompressor

__all__ = [
    "SECTIONS",
    "Compression",
    "MemoryReader",
    "ReadPath",
    "ReadResult",
    "ThreadCompressor",
    "latest_user_index",
    "looks_like_instructions",
    "memory_headers",
    "message_text",
]
