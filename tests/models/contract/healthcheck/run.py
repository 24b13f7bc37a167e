"""healthcheck() turns False while the file named by $HEALTH_FLAG exists."""

import os
import pathlib

from cog import BaseRunner


class Runner(BaseRunner):
    def healthcheck(self) -> bool:
        return not pathlib.Path(os.environ["HEALTH_FLAG"]).exists()

    def run(self) -> str:
        return "ok"
