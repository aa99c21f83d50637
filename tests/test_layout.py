"""The package layout's import rule, checked as CI checks everything: base <- stages <- flows <- the
CLI and the bot, and the corpus store imports no stage (contracts in .importlinter)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from conftest import REPO


def test_imports_go_one_way():
    exe = shutil.which("lint-imports", path=str(Path(sys.executable).parent)) or "lint-imports"
    r = subprocess.run([exe, "--config", str(REPO / ".importlinter")], cwd=REPO, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    assert "2 kept, 0 broken" in r.stdout
