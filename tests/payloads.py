"""A planted pickle payload for the tests that check a file kind loads no code."""
from __future__ import annotations

import os
from pathlib import Path


class Planted:
    """Unpickled with code allowed, it creates the folder `marker` (os.mkdir): the test checks it does not."""

    def __init__(self, marker: str | Path):
        self.marker = str(marker)

    def __reduce__(self):
        return (os.mkdir, (self.marker,))
