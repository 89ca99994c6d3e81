"""``python -m assistant search|ask|eval``: see `assistant.cli.search`."""

from assistant.cli.search import main

if __name__ == "__main__":
    raise SystemExit(main())
