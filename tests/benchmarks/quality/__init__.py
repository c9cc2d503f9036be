"""Memory quality: the evaluation through the HTTP API (`make eval`, `make eval-real`) and
the recall and grounding benchmarks, with their data."""
