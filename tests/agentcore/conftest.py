import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agentcore_fixtures import aws_env, emulator  # noqa: F401  (fixtures)
