"""Stage 8, the OpenAI-compatible API: ``/v1/models`` and ``/v1/chat/completions``.

`protocol` is the wire format (requests in, completions and chunks out, our
``sources`` extra); `keys` the hashed bearer keys, each mapped to a user; `server`
the Starlette routes, the per-process gate and the uvicorn runner (docs/api.md).
"""
