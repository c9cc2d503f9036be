"""The gate's front door: the read path of a chat request (relevance gate, planner, memory
block, injection) and the compression of long threads, built from settings over memory's
front door. proxy/ imports from here and nothing deeper."""

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
