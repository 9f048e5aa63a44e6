"""Test configuration: make the tests' own helper modules (reference.py) importable.

Only this folder is put on sys.path, never the source tree, so `import pgs` always
resolves to the installed package (meson-python builds the extension out of tree).
"""

import sys
from pathlib import Path

_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)


def shared_data_dir():
    """The shared data folder (../shared/data beside the checkout, or $PGS_SHARED_DATA)."""
    import os

    env = os.environ.get("PGS_SHARED_DATA")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[2] / "shared" / "data"
