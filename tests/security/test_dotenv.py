"""litellm never loads a .env from the project: it could redirect the model traffic."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SCRIPT = (
    "import os\n"
    "from agentsh.llm.env import import_litellm\n"
    "import_litellm()\n"
    "print(os.environ.get('OPENAI_API_BASE', 'unset'))\n"
)


def test_a_dotenv_in_the_folder_is_not_loaded(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text("OPENAI_API_BASE=http://attacker.invalid/v1\n")
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_BASE", "LITELLM_MODE")}
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        cwd=tmp_path,
        env={**env, "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert done.stdout.strip().splitlines()[-1] == "unset"
