"""What tests and benchmarks read or make: the LoCoMo, LongMemEval and generic-prompt
readers, a document set with its recall measure, a hand-written PDF, tiktoken's own
o200k_base as the token counter's reference."""
