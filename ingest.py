"""Index policy documents: ``python ingest.py data/policies [--index PATH] ...``."""

from assistant.cli.ingest import ingest_main

if __name__ == "__main__":
    raise SystemExit(ingest_main())
