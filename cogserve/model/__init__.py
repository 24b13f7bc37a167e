"""The model contract: a model folder's cog.yaml, loading its runner, reading its
signature into typed specs, the OpenAPI schema and input validation."""
