import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from daemon_helpers import silent, start_daemon  # noqa: F401  (fixtures)
