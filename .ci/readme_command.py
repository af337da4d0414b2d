"""Print the README's Nth command (1: the main job, 2: the project's tests): the Nth ```bash
block of README.md, as written, so CI runs what a newcomer pastes and no copy can drift."""

import re
import sys
from pathlib import Path

n = int(sys.argv[1])
readme = Path(__file__).resolve().parents[1] / "README.md"
blocks = [b.strip() for b in re.findall(r"```bash\n(.*?)```", readme.read_text(encoding="utf-8"), flags=re.S)]
if len(blocks) < n:
    sys.exit(f"{readme} has {len(blocks)} bash blocks; command {n} is missing")
print(blocks[n - 1])
