"""What tests run against: the proxy (in-process or as a process), the fake upstream and
fake core models, the throwaway PostgreSQL cluster, the store backend and a raw connection
to it, free ports."""
