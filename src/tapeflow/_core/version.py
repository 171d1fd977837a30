"""The installed package's version (`tapeflow.__version__`)."""
from __future__ import annotations

from importlib import metadata


def version() -> str:
    try:
        return metadata.version("tapeflow")
    except metadata.PackageNotFoundError:  # running from a source tree without an install
        return "0.1.0"
