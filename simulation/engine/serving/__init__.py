"""Request-level serving (issue 25 part 1): sampled requests through per-replica queues."""
