"""The HTTP front ends: an ASGI app with Cog's routes, plus registered extensions (V2, SSE)."""
