"""Start the policy assistant's chat UI: ``python ui.py [--host H] [--port P] [--index DIR]``."""

import logging

from assistant.cli.serve import main

if __name__ == "__main__":
    logging.captureWarnings(True)
    raise SystemExit(main())
