"""The web console in a real browser: Debian's headless chromium driven by Selenium through
Debian's chromedriver (``make browser-tools`` installs both), against ``python -m
rmq.console`` and a real nameserver and broker. The cluster page lists the broker and draws
its TPS, the topic page shows the topic just created, a search by key finds the message just
sent and shows its body as text (markup in it stays text), an unknown topic and a
nameserver that is down show a readable error, and a group's lag is above 0 until a consumer
runs, then falls to 0 on the page's own refresh, and comes back when the reset form moves the
offsets to long ago. Screenshots go to ``$RMQ_TEST_ARTIFACTS/console`` (default
``tests/artifacts/console``, git-ignored)."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.ui import WebDriverWait

import rmq
from helpers import free_port, push_consumer
from test_ops_console import (
    GROUP,
    HOSTILE,
    KEY,
    PRODUCER_GROUP,
    TOPIC,
    ConsoleProcess,
    Env,
    ok,
)
from test_ops_console import env as env  # the module's cluster and console

pytestmark = pytest.mark.timeout(180)

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
ARTIFACTS = (
    Path(os.environ.get("RMQ_TEST_ARTIFACTS") or Path(__file__).parent / "artifacts") / "console"
)
WAIT_S = 30


@pytest.fixture(scope="module")
def browser() -> Iterator[WebDriver]:
    missing = [p for p in (CHROMIUM, CHROMEDRIVER) if not os.access(p, os.X_OK)]
    assert not missing, f"{missing} not installed: run `make browser-tools`"
    profile = tempfile.TemporaryDirectory(prefix="rmq-chromium-")
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    # This machine's network is closed: no background fetches, no QUIC, a fresh profile.
    for flag in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--window-size=1280,900",
        f"--user-data-dir={profile.name}",
    ):
        opts.add_argument(flag)
    driver = webdriver.Chrome(options=opts, service=Service(executable_path=CHROMEDRIVER))
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    try:
        yield driver
    finally:
        driver.quit()
        profile.cleanup()


def until(driver: WebDriver, cond: Callable[[WebDriver], Any], what: str) -> Any:
    return WebDriverWait(driver, WAIT_S, poll_frequency=0.1).until(cond, f"waiting for {what}")


def text_of(driver: WebDriver, css: str) -> str | None:
    """The rendered text of the first element ``css`` selects now (read in one script, so a
    refresh that replaces the element in between cannot make it stale)."""
    text = driver.execute_script(
        "const e = document.querySelector(arguments[0]); return e ? e.innerText : null;", css
    )
    return None if text is None else str(text)


def shot(driver: WebDriver, name: str) -> None:
    path = ARTIFACTS / f"{name}.png"
    assert driver.save_screenshot(str(path)), path
    assert path.stat().st_size > 1000


def test_cluster_page_lists_the_broker_and_charts_tps(browser: WebDriver, env: Env) -> None:
    browser.get(env.url + "?poll=500#/cluster")
    until(browser, lambda d: env.broker_addr in (text_of(d, "#brokers") or ""), "the broker row")
    row = text_of(browser, "#brokers tbody tr") or ""
    assert "broker-console" in row and "MASTER" in row, row
    # One line per broker for in and for out, of two points or more once it polled twice.
    until(
        browser,
        lambda d: d.execute_script(
            "const l = document.querySelectorAll('#tps-chart polyline');"
            "return l.length === 2 && [...l].every((p) => p.points.numberOfItems >= 2);"
        ),
        "the TPS chart",
    )
    assert env.namesrv in (text_of(browser, "#namesrv") or "")
    shot(browser, "cluster")
    # The address opens the broker's runtime table (brokerStatus).
    browser.find_element(By.LINK_TEXT, env.broker_addr).click()
    until(browser, lambda d: "putTps" in (text_of(d, "#runtime") or ""), "the runtime table")
    assert "brokerVersionDesc" in (text_of(browser, "#runtime") or "")


def test_topic_page_shows_the_topic_just_created(browser: WebDriver, env: Env) -> None:
    browser.get(env.url + "#/topics")
    link = until(
        browser,
        lambda d: next(
            (a for a in d.find_elements(By.CSS_SELECTOR, "#topics a") if a.text == TOPIC), None
        ),
        "the topic in the list",
    )
    link.click()
    until(
        browser, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#queues tbody tr")) == 4, "queues"
    )
    assert text_of(browser, "#topic-name") == TOPIC
    assert "broker-console" in (text_of(browser, "#route") or "")
    shot(browser, "topic")


def test_search_by_key_shows_the_body_as_text(browser: WebDriver, env: Env) -> None:
    browser.get(env.url + "#/messages")
    until(browser, lambda d: d.find_elements(By.ID, "key-topic"), "the search form")
    browser.find_element(By.ID, "key-topic").send_keys(TOPIC)
    browser.find_element(By.ID, "key-key").send_keys(KEY)
    browser.find_element(By.ID, "key-search").click()
    until(browser, lambda d: text_of(d, "#message-body") == HOSTILE, "the message body")
    assert env.sent[-1].msg_id in (text_of(browser, "#results") or "")
    # The markup in the body and key stayed text: no image element, the title untouched.
    assert browser.find_elements(By.TAG_NAME, "img") == []
    assert browser.title == "rmq console"
    browser.find_element(By.ID, "body-hex").click()
    assert (text_of(browser, "#message-body") or "").startswith("00000000  3c 69 6d 67")
    browser.find_element(By.ID, "trace-button").click()
    until(browser, lambda d: (text_of(d, "#trace") or "") != "Show trace", "the trace panel")
    shot(browser, "message")


def test_producers_page_lists_the_producer_group(browser: WebDriver, env: Env) -> None:
    browser.get(env.url + "#/producers")
    until(
        browser,
        lambda d: PRODUCER_GROUP in (text_of(d, "#all-producers") or ""),
        "the producer group",
    )
    shot(browser, "producers")


def test_an_unknown_topic_is_a_readable_error(browser: WebDriver, env: Env) -> None:
    browser.get(env.url + "#/topic/NoSuchConsoleTopic")
    until(browser, lambda d: d.find_element(By.ID, "error").is_displayed(), "the error box")
    message = text_of(browser, "#error") or ""
    assert "NoSuchConsoleTopic" in message and "Traceback" not in message, message


def test_a_dead_nameserver_is_a_readable_error_in_the_page(browser: WebDriver) -> None:
    dead = f"127.0.0.1:{free_port()}"
    console = ConsoleProcess("-n", dead)
    try:
        browser.get(console.url + "#/cluster")
        until(browser, lambda d: d.find_element(By.ID, "error").is_displayed(), "the error box")
        message = text_of(browser, "#error") or ""
        assert f"cannot reach nameserver {dead}" in message, message
        assert "Traceback" not in message
        shot(browser, "namesrv-down")
    finally:
        assert console.stop() == 0


def test_group_lag_falls_to_zero_when_a_consumer_runs(browser: WebDriver, env: Env) -> None:
    def api_lag() -> int | None:
        d = ok(env.url, "/api/group", group=GROUP)
        return d["progress"]["diffTotal"] if d["progress"] else None

    # The group consumes what is there, goes away, and five more messages arrive.
    first = push_consumer(env.namesrv, GROUP, TOPIC, lambda msgs: None)
    try:
        until(browser, lambda _: api_lag() == 0, "the first consumer to catch up")
    finally:
        first.shutdown()
    for i in range(5):
        env.producer.send(rmq.Message(TOPIC, f"late {i}".encode()))
    browser.get(env.url + f"?poll=1000#/group/{GROUP}")
    until(browser, lambda d: text_of(d, "#lag-total") == "5", "a lag of 5 on the page")
    assert "CONSUMER_NOT_ONLINE" in (text_of(browser, "#clients-none") or "")
    shot(browser, "group-lag")
    consumer = push_consumer(env.namesrv, GROUP, TOPIC, lambda msgs: None)
    try:
        # No reload: the page's own refresh shows the consumer and the lag falling to 0.
        until(browser, lambda d: text_of(d, "#lag-total") == "0", "the lag to fall to 0")
        until(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#clients tbody tr"), "clients")
        shot(browser, "group-caught-up")
    finally:
        consumer.shutdown()
    # Reset offset by time to long ago (the form's POST): every message is lag again.
    until(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#clients-none"), "the group offline")
    assert browser.find_element(By.ID, "reset-topic").get_attribute("value") == TOPIC
    browser.execute_script("document.getElementById('reset-time').value = '2001-01-01T00:00:00'")
    browser.find_element(By.ID, "reset-button").click()
    until(
        browser,
        lambda d: len(d.find_elements(By.CSS_SELECTOR, "#reset-table tbody tr")) == 4,
        "reset",
    )
    total = len(env.sent) + 5
    until(browser, lambda d: text_of(d, "#lag-total") == str(total), f"a lag of {total}")
    shot(browser, "group-reset")
