"""The WebUI: static files served by the API at / and /static."""

from pathlib import Path

STATIC_DIR = Path(__file__).resolve().parent / "static"
