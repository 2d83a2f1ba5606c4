"""CI cannot pass by skipping the browser suite: the rule in tests/browser/conftest.py."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

_PATH = Path(__file__).resolve().parent / "browser" / "conftest.py"
_spec = importlib.util.spec_from_file_location("browser_conftest_under_test", _PATH)
rule = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(rule)


@pytest.mark.parametrize("environ, required", [
    ({}, False),
    ({"CI": "true"}, True),          # what GitHub Actions sets
    ({"CI": "1"}, True),
    ({"CI": "false"}, False),
    ({"CI": ""}, False),
    ({"LLMMATH_REQUIRE_BROWSER": "1"}, True),
    ({"LLMMATH_REQUIRE_BROWSER": "0"}, False),
])
def test_when_a_browser_is_required(environ, required):
    assert rule.browser_required(environ) is required


def test_missing_browser_fails_in_ci():
    with pytest.raises(pytest.fail.Exception, match="a browser is required"):
        rule._no_browser("Chromium not found", environ={"CI": "true"})


def test_missing_browser_skips_on_a_laptop():
    with pytest.raises(pytest.skip.Exception, match="Chromium not found"):
        rule._no_browser("Chromium not found", environ={})


def test_runner_google_chrome_is_found():
    # GitHub's ubuntu-24.04 image: no chromium, google-chrome preinstalled.
    where = {"google-chrome": "/usr/bin/google-chrome"}
    assert rule.find_browser({}, where.get) == "/usr/bin/google-chrome"
    where["chromium"] = "/usr/bin/chromium"
    assert rule.find_browser({}, where.get) == "/usr/bin/chromium"
    assert rule.find_browser({"LLMMATH_CHROMIUM": "/opt/x"}, where.get) == "/opt/x"
