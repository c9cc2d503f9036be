"""What the proxy itself costs a request: relaying, recording, big messages, long threads,
the memory tool."""
