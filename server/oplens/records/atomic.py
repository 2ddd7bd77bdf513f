"""Files written whole or not at all: a reader never sees half a result.json."""

from __future__ import annotations

import json
import os
from pathlib import Path


def write_json_atomic(path: Path, data: object) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=1)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
