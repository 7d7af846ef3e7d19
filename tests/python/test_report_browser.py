"""The report as a user sees it: index.html in headless Chromium, driven by selenium.

Debian's chromium and chromium-driver come from `make setup` (scripts/setup-apt.sh),
selenium from the test extra (pyproject.toml). Without them the test is skipped
and says why.
"""
import shutil

import pytest

from conftest import locklab

# A laptop's first screen.
WIDTH, HEIGHT = 1366, 768


@pytest.fixture
def browser():
    try:
        from selenium import webdriver
    except ImportError:
        pytest.skip("selenium is not installed (make setup: pip install '.[test]')")
    chrome = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    if not chrome or not driver:
        pytest.skip("no chromium or chromedriver on PATH (make setup installs Debian's "
                    "chromium and chromium-driver)")
    options = webdriver.ChromeOptions()
    options.binary_location = chrome
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                f"--window-size={WIDTH},{HEIGHT}"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    # The driver named, so that selenium looks for none on the network.
    session = webdriver.Chrome(options=options,
                               service=webdriver.ChromeService(executable_path=driver))
    session.set_page_load_timeout(60)
    yield session
    session.quit()


def page(browser, index):
    """Open INDEX; its images (src, loaded, natural width) and the console's messages."""
    browser.get(index.as_uri())
    images = browser.execute_script(
        "return Array.from(document.images, i => [i.getAttribute('src'), i.complete,"
        " i.naturalWidth])")
    return images, browser.get_log("browser")


def test_report_page_in_a_browser(fake, tmp_path, browser):
    db, out_dir = tmp_path / "l.db", tmp_path / "r"
    env = fake.env()
    out = locklab("sweep", "--locks", "innodb56,pthread", "--threads", "1,2,4,8", "--hold-ns",
                  "0,1000", "--repeat", "2", "--duration", "0.01", "--db", db, env=env)
    assert out.returncode == 0, out.stderr
    out = locklab("report", "1", "--db", db, "--out", out_dir, env=env)
    assert out.returncode == 0, out.stderr
    index = out_dir / "index.html"

    images, console = page(browser, index)
    assert len(images) == 7, images  # six line charts and the CPU bars
    for src, complete, width in images:
        assert complete and width > 0, src
    assert [m for m in console if m["level"] in ("SEVERE", "WARNING")] == []

    # The verdict, its heading and every line of it, in the first screen, unscrolled.
    box = browser.execute_script(
        "const v = document.getElementById('verdict');"
        "const r = v.getBoundingClientRect();"
        "return [r.top, r.bottom, window.innerHeight, v.innerText];")
    top, bottom, height, text = box
    assert 0 <= top and bottom <= height, box
    assert "Verdict: the mutex to use on this machine" in text
    assert "innodb56" in text and "pthread" in text
    # No row of a table is only empty cells.
    empty = browser.execute_script(
        "return Array.from(document.querySelectorAll('tr'))"
        ".filter(r => r.cells.length && Array.from(r.cells).every(c => !c.textContent.trim()))"
        ".length")
    assert empty == 0

    # The test sees a broken page: an image gone is reported, and so is its console error.
    (out_dir / "wait_p50.png").unlink()
    images, console = page(browser, index)
    assert [src for src, complete, width in images if not width] == ["wait_p50.png"]
    assert any("wait_p50.png" in m["message"] for m in console), console
