import tempfile

from cog import BaseRunner, Path


class Runner(BaseRunner):
    def run(self, n: int = 2) -> list[Path]:
        folder = Path(tempfile.mkdtemp())
        paths = []
        for i in range(n):
            p = folder / f"part{i}.txt"
            p.write_text(f"part {i}")
            paths.append(p)
        return paths
