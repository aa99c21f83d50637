"""Optimas runner: the profile -> analyze -> propose -> evaluate pipeline (knows nothing of GitHub).

base <- profiling, analysis, proposal, evaluation (the stages) <- flows <- cli (and the bot); the
import rule is checked by import-linter (.importlinter)."""

__version__ = "0.1.0"
