"""Per-model virtual environments: the packages a model's cog.yaml declares, built with uv.

A Cog model names its Python dependencies in `build:` of cog.yaml; Cog installs them into
a Docker image. cogserve instead builds a virtual environment per distinct `build:` (keyed
by a hash of everything that decides its contents), once, in a cache folder, and runs the
model's worker with that environment's interpreter. The HTTP parent stays in cogserve's
own environment and never imports the model's packages.

- `spec.py`: what `build:` asks for, and the key of the environment that satisfies it
- `selfwheel.py`: a wheel of the running cogserve, installed into every environment
- `store.py`: the cache folder: ready environments, builds in progress, removal, pruning
- `builder.py`: creating and filling an environment with uv
- `certs.py`: the certificates a build trusts (the system's store, COG_CA_CERT)
- `weights.py`: cog.yaml `weights:`, linked at their targets before the worker starts
- `system.py`: `build.system_packages` / `build.run`: checked and printed, run on request
- `command.py`: `cogserve env`
"""
