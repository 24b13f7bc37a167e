"""cog.yaml names nope.py, which does not exist."""
