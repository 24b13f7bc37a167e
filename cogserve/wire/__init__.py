"""What crosses a process boundary: the worker protocol's messages and frames, JSON
codecs, the V2 datatypes and the shared fixed sets (health, status, events)."""
