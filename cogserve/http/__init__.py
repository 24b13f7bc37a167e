"""The HTTP front ends: the ASGI app (a router) with Cog's routes, SSE, the playground."""
