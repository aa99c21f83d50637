"""WSGI entry point: `flask --app bot.wsgi run`, or any WSGI server with `bot.wsgi:app`."""

from bot.app import create_app
from bot.settings import Settings

app = create_app(Settings.from_env())
