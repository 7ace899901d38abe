"""mtserve: a self-hosted machine-translation service."""

__version__ = "0.1.0"
