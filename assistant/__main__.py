"""``python -m assistant search|eval``: see `assistant.search_cli`."""

from assistant.search_cli import main

if __name__ == "__main__":
    raise SystemExit(main())
