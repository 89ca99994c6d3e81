"""The one path of a question between the core stages and the doors (web, api, cli).

`stack` wires the parts once per process; `request` reads a question and its conversation
once; `turn` answers it into one `Outcome`, recorded once; `visibility` decides what a user
may see outside search; `sources` turns an answer's sources into data each door renders
its own way (`passages` and `plain` serve it).
"""
