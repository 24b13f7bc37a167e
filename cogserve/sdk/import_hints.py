"""What to do about a model that fails to import a module: the fix, by its cog.yaml, or,
for a name of the `cog` package that no Cog SDK cogserve follows has, what to change.

"No module named 'torch'" alone leaves a new user guessing. cog.yaml's `build:` says
which packages the model needs, so the message can say whether the module's package is
declared there (then it is not installed where the model runs: cogserve builds the
model's environment unless `--no-env`) or not (then the fix is a line in
`build.python_packages`). Only read when an import has already failed.
"""

from __future__ import annotations

import pathlib
import re

# import name -> package name, where they differ, for the packages models use most
PACKAGE_OF = {
    "PIL": "pillow", "cv2": "opencv-python", "sklearn": "scikit-learn", "yaml": "pyyaml",
    "skimage": "scikit-image", "bs4": "beautifulsoup4", "google.protobuf": "protobuf",
    "dateutil": "python-dateutil", "dotenv": "python-dotenv", "fitz": "pymupdf",
    "Crypto": "pycryptodome", "attr": "attrs", "jwt": "pyjwt", "magic": "python-magic",
}


def missing_module_hint(directory: pathlib.Path, module: str) -> str:
    """One sentence: whether cog.yaml declares the module's package, and the fix."""
    top = module.split(".")[0]
    package = PACKAGE_OF.get(module) or PACKAGE_OF.get(top) or top
    cog_yaml = directory / "cog.yaml"
    declared = _declared(directory)
    if declared is None:
        return (f"add `{package}` to build.python_packages in a cog.yaml next to the model "
                "(cogserve then installs it into the model's environment)")
    names = {_normalise(n) for n in declared}
    if _normalise(package) in names or _normalise(top) in names:
        return (f"{cog_yaml} declares `{package}`, but it is not installed where the model "
                "runs: serve without --no-env so cogserve installs the model's environment "
                "(`cogserve env` builds it and prints where), or install it into this Python")
    return (f"{cog_yaml} does not declare it: add `- \"{package}\"` under build.python_packages "
            "(or a line to the build.python_requirements file) and cogserve installs it")


def _declared(directory: pathlib.Path) -> list[str] | None:
    """Package names cog.yaml's build section declares; None without a readable cog.yaml."""
    import yaml

    try:
        data = yaml.safe_load((directory / "cog.yaml").read_text()) or {}
    except (OSError, yaml.YAMLError):
        return None
    build = data.get("build") if isinstance(data, dict) else None
    if not isinstance(build, dict):
        return []
    lines = [str(p) for p in build.get("python_packages") or []]
    requirements = build.get("python_requirements")
    if isinstance(requirements, str):
        try:
            lines += (directory / requirements).read_text().splitlines()
        except OSError:
            pass
    names = []
    for line in lines:
        match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", line.split("#")[0])
        if match:
            names.append(match.group(1))
    return names


def _normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def old_sdk_hint(exc: BaseException) -> str | None:
    """For an import of a `cog` name that Cog 0.23.1 lacks and cogserve does not carry over
    from the older SDKs (README, "Models written for older Cog releases"), what to do."""
    if isinstance(exc, ImportError):
        module = re.sub(r"^cogserve\.cog\b", "cog", exc.name or "")  # the alias's own name
        match = re.match(r"cannot import name '([^']+)'", str(exc))
        name = f"{module}.{match.group(1)}" if match and not isinstance(
            exc, ModuleNotFoundError) else module
    elif isinstance(exc, AttributeError):
        match = re.match(r"module '(cog(?:\.[a-z_.]+)?)' has no attribute '([^']+)'", str(exc))
        name = f"{match.group(1)}.{match.group(2)}" if match else ""
    else:
        return None
    if not name.startswith("cog."):  # a bare `cog` missing is no SDK's doing
        return None
    return (f"{name} is not part of Cog 0.23.1's SDK, which cogserve serves (with the older "
            "SDKs' names its README lists): the model was written for another Cog release; "
            "import the name's replacement from `cog` (Cog's docs/python.md lists the API) "
            "or drop the import")
