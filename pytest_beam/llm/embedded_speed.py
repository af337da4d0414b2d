"""How fast the embedded model runs on this machine, so a dry run can say how long a run takes.

The server counts the prompt tokens it processed and the tokens it generated, and the seconds
each took (its `/metrics`, on with `--metrics`). When an embedded run stops, those totals are
kept in the cache folder; the dry run divides its token estimate by them. Before any run on this
machine it uses the speed measured on 2 idle cores (bench/embedded_model.py), and says so.
"""

from __future__ import annotations

import json
import re
import time
import urllib.request
from dataclasses import asdict, dataclass
from pathlib import Path

from ..files import atomic_write
from ..paths import cache_root

# Too few tokens make a noisy rate: a run must have done at least this much to be kept.
MIN_TOKENS = 200


@dataclass(frozen=True)
class Speed:
    prompt_tps: float
    generated_tps: float
    source: str

    def seconds(self, prompt_tokens: int, completion_tokens: int) -> float:
        """One request at a time: prompt processing and generation add up."""
        return prompt_tokens / self.prompt_tps + completion_tokens / self.generated_tps


REFERENCE = Speed(prompt_tps=55.0, generated_tps=19.0,
                  source="as measured on 2 idle cores (bench/embedded_model.py); busy cores are slower")


def speed_file() -> Path:
    return cache_root() / "models" / "embedded-speed.json"


_METRIC = re.compile(r"^llamacpp:(prompt_tokens_total|prompt_seconds_total|tokens_predicted_total|"
                     r"tokens_predicted_seconds_total)\s+([0-9.eE+-]+)\s*$", re.M)


def read_metrics(root_url: str, timeout: float = 5.0) -> Speed | None:
    """This server's measured rates, or None when it has done too little to tell."""
    with urllib.request.urlopen(root_url + "/metrics", timeout=timeout) as resp:
        found = {name: float(value) for name, value in _METRIC.findall(resp.read().decode("utf-8", "replace"))}
    prompt, prompt_s = found.get("prompt_tokens_total", 0.0), found.get("prompt_seconds_total", 0.0)
    made, made_s = found.get("tokens_predicted_total", 0.0), found.get("tokens_predicted_seconds_total", 0.0)
    if prompt < MIN_TOKENS or made < MIN_TOKENS or prompt_s <= 0 or made_s <= 0:
        return None
    day = time.strftime("%Y-%m-%d")
    return Speed(prompt / prompt_s, made / made_s,
                 source=f"as measured on this machine on {day} ({int(prompt):,} prompt and "
                        f"{int(made):,} generated tokens)")


def save(speed: Speed, path: Path | None = None) -> None:
    path = path or speed_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, json.dumps(asdict(speed), indent=1))


def load(path: Path | None = None) -> Speed:
    """The last speed kept on this machine, else the reference one."""
    path = path or speed_file()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        speed = Speed(float(data["prompt_tps"]), float(data["generated_tps"]), str(data["source"]))
    except FileNotFoundError:
        return REFERENCE
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"{path} does not hold a speed ({type(exc).__name__}: {exc}); delete it") from None
    if speed.prompt_tps <= 0 or speed.generated_tps <= 0:
        raise ValueError(f"{path} holds a speed of 0; delete it")
    return speed
