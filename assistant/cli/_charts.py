"""The one importer of matplotlib (the `plot` extra): charts of the sweep and the gaps report."""

from __future__ import annotations

from typing import Any

from assistant.errors import ConfigError

__all__ = ["pyplot"]


def pyplot(purpose: str) -> Any:
    """Return ``matplotlib.pyplot`` on the file-only Agg backend.

    Raises:
        ConfigError: matplotlib is not installed (``purpose`` names what needed it).
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise ConfigError(f"{purpose} needs matplotlib: pip install '.[plot]'") from exc
    return plt
