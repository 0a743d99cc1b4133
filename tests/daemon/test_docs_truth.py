"""The sample scrape of docs/operating.md names what the built-in default really exports."""

from __future__ import annotations

import re

from daemon_helpers import ROOT
from prometheus_client.parser import text_string_to_metric_families

from healthd.exporters.prometheus import METRIC_NAMES
from healthd.settings import load_settings


def test_the_operating_pages_sample_scrape_uses_real_names_and_labels():
    page = (ROOT / "docs" / "operating.md").read_text()
    blocks = re.findall(r"```\n(healthd_freshness_ratio.*?)```", page, re.S)
    assert len(blocks) == 1
    defaults = load_settings(None)
    families = list(text_string_to_metric_families(blocks[0]))
    for family in families:
        for sample in family.samples:
            name = re.sub(r"_(count|sum|bucket)$", "", sample.name)
            assert name in METRIC_NAMES, sample.name
            if "source" in sample.labels:
                assert sample.labels["source"] in defaults.sources, sample
            if "target" in sample.labels:
                assert sample.labels["target"] in defaults.targets, sample
