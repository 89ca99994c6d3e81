"""The one path of a question between the core stages and the doors (web, api, cli).

`stack` wires the parts once per process; `sources` turns an answer's sources into data
each door renders its own way.
"""
