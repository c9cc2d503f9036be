"""What the tests and benchmarks share: servers, clients, data readers."""
