"""`build.system_packages` and `build.run`: what a Cog image build does as root.

cogserve has no image to build and usually no root, so it checks what it can (is each
Debian package installed, per dpkg) and prints the exact command that would install the
missing ones. `cogserve env --install-system-packages` runs that command and then the
`build.run` commands, as Cog's build would.
"""

from __future__ import annotations

import logging
import os
import shlex
import shutil
import subprocess
from dataclasses import dataclass

from cogserve.envs.spec import BuildSpec

log = logging.getLogger("cogserve")


@dataclass(frozen=True)
class SystemCheck:
    missing: tuple[str, ...]
    unchecked: bool  # no dpkg-query here: nothing could be checked
    run: tuple[str, ...]

    @property
    def install_command(self) -> str | None:
        if not self.missing:
            return None
        sudo = "" if os.geteuid() == 0 else "sudo "
        return (f"{sudo}apt-get update && {sudo}apt-get install -y --no-install-recommends "
                + " ".join(shlex.quote(p) for p in self.missing))

    def lines(self) -> list[str]:
        """What to tell the user, one line each."""
        out = []
        if self.unchecked:
            out.append("build.system_packages: cannot check (no dpkg-query here): "
                       + " ".join(self.missing))
        elif self.missing:
            out.append(f"build.system_packages not installed: {' '.join(self.missing)}; "
                       f"install them with: {self.install_command}")
        for command in self.run:
            out.append(f"build.run is not run by cogserve: {command}")
        return out


def check(spec: BuildSpec) -> SystemCheck:
    if not spec.system_packages:
        return SystemCheck((), False, spec.run)
    dpkg = shutil.which("dpkg-query")
    if dpkg is None:
        return SystemCheck(spec.system_packages, True, spec.run)
    result = subprocess.run(
        [dpkg, "-W", "-f", "${Package} ${db:Status-Status}\n", *spec.system_packages],
        capture_output=True, text=True, check=False)
    installed = {line.split()[0].split(":")[0] for line in result.stdout.splitlines()
                 if line.endswith(" installed")}
    missing = tuple(p for p in spec.system_packages if p.split(":")[0] not in installed)
    return SystemCheck(missing, False, spec.run)


def warn_missing(spec: BuildSpec) -> SystemCheck:
    result = check(spec)
    for line in result.lines():
        log.warning("%s", line)
    return result


def install(result: SystemCheck, directory: str) -> int:
    """Run the install command and the build.run commands; the first failure's status."""
    commands = [c for c in (result.install_command,) if c] + list(result.run)
    for command in commands:
        print(f"cogserve: running: {command}", flush=True)
        code = subprocess.run(["sh", "-c", command], cwd=directory, check=False).returncode
        if code != 0:
            return code
    return 0
