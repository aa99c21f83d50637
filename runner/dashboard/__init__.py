"""The dashboard: every run under a runs folder, its evidence and its proof, as web pages. Read-only;
pages render from each run's small JSON and text files (never a whole profile)."""
