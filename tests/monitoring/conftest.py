import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from monitoring_helpers import start_healthd


@pytest.fixture(scope="session")
def healthd(tmp_path_factory):
    """One real `healthd run` for the monitoring tests (the bundled example against
    reference and naive, a run every 2 s): yields its base URL; stopped by its pid."""
    proc, url = start_healthd(tmp_path_factory.mktemp("healthd"))
    try:
        yield url
    finally:
        proc.stop()
