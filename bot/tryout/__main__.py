"""`python -m bot.tryout`: see bot/tryout/cli.py."""

from bot.tryout.cli import main

raise SystemExit(main())
