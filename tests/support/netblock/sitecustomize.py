"""Loaded first by a test subprocess (via PYTHONPATH): any network connection fails.

Only loopback stays allowed, for tests whose own servers listen on 127.0.0.1.
"""

import socket

_connect = socket.socket.connect


def _guarded_connect(self: socket.socket, address: object) -> None:
    host = address[0] if isinstance(address, tuple) else ""
    if self.family in (socket.AF_INET, socket.AF_INET6) and host not in ("127.0.0.1", "::1"):
        raise OSError(f"network blocked by the test: {address!r}")
    _connect(self, address)  # type: ignore[arg-type]


socket.socket.connect = _guarded_connect  # type: ignore[method-assign,assignment]
