"""The Open Inference Protocol (KServe/Triton "V2" REST) over the same runtime as Cog's API."""
