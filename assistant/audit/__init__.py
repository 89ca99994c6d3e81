"""The audit log: what staff asked, what they were told, and what they thought of it.

Between answering and web: `store` (the only module that touches SQLite), `log`
(the background writer the chat hands records to), `recording` (an answer run
to an `AuditRecord`), `export` (JSON lines, CSV and evaluation candidates) and
`report` (the gaps report a policy owner reads).
"""
