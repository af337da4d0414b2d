"""Copy standard input to standard output, each line prefixed with the seconds since this started.

    some command 2>&1 | python3 .ci/timestamps.py > stamped.txt

.ci/run keeps the README's first command's output this way, so .ci/stage_times.py can say how long
each stage took. Standard library only: it runs before any project venv exists.
"""

import sys
import time

started = time.monotonic()
for line in sys.stdin:
    sys.stdout.write(f"{time.monotonic() - started:9.1f} {line}")
    sys.stdout.flush()
