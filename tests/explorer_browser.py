"""The explorer in a real browser: Debian's chromium driven by Playwright against a live
explorer that follows a localnet running the demo scenario (three providers, one cheating and
slashed). Run by tests/tests/the_explorer_shows_the_demo_market_live_in_a_browser.rs:

    python explorer_browser.py EXPLORER_URL SCREENSHOT_DIR

It prints `READY <next order id>` once an order page that does not exist yet is open, and
reads the posted order's id from stdin: the page must then show the order's bids arriving and
its clearing price without a reload. It ends with `RESULT <json>` (page load figures).
"""

import json
import os
import shutil
import sys
import time
import urllib.request

from playwright.sync_api import sync_playwright

from explorer_paint import first_contentful_paint


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def fetch_json(url):
    req = urllib.request.Request(url, headers={"Accept": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.loads(r.read())


def wait_for(what, timeout_s, probe, interval=0.2):
    deadline = time.time() + timeout_s
    while True:
        value = probe()
        if value:
            return value
        if time.time() > deadline:
            raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")
        time.sleep(interval)


def prices_in_order(page):
    cells = page.locator("#providers tbody tr").all()
    out = []
    for row in cells:
        price = row.locator("span.price")
        out.append(int(price.get_attribute("data-ugpu")) if price.count() else None)
    return out


def main():
    base, shots = sys.argv[1], sys.argv[2]
    os.makedirs(shots, exist_ok=True)
    chromium = os.environ.get("GPUCHAIN_CHROMIUM") or shutil.which("chromium")
    check(chromium, "Debian's chromium is not installed: run scripts/install-deps.sh")
    figures = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1360, "height": 1000})
        console_errors = []
        page.on("pageerror", lambda e: console_errors.append(str(e)))

        # The providers table: the three providers with their hardware, sortable by price.
        page.goto(base + "/providers")
        figures["fcp_providers_ms"] = first_contentful_paint(page, 3000)
        rows = page.locator("#providers tbody tr")
        check(rows.count() == 3, f"three providers listed, got {rows.count()}")
        table = page.inner_text("#providers")
        for region in ("eu-west", "us-east", "ap-south"):
            check(region in table, f"region {region} shown: {table}")
        check("cpu" in table, "class shown")
        check("1,000 GPU" in table, f"bonds shown in GPU: {table}")
        page.click("a.sort[data-sort=price]")
        page.wait_for_url("**sort=price&dir=asc**")
        ascending = prices_in_order(page)
        check(None not in ascending, f"every provider has bid: {ascending}")
        check(ascending == sorted(ascending), f"ascending by price: {ascending}")
        page.click("a.sort[data-sort=price]")
        page.wait_for_url("**sort=price&dir=desc**")
        descending = prices_in_order(page)
        check(descending == sorted(descending, reverse=True), f"descending: {descending}")
        page.screenshot(path=os.path.join(shots, "providers.png"), full_page=True)

        # The cheater's page shows its slash.
        providers = fetch_json(base + "/providers")["providers"]
        slashed = [r for r in providers if r["slashes"] > 0]
        check(len(slashed) == 1, f"exactly the cheater slashed: {providers}")
        page.goto(base + "/providers/" + slashed[0]["operator"])
        slash_rows = page.locator("#slash-records tbody tr")
        check(slash_rows.count() >= 1, "the slash is listed on the cheater's page")
        check("wrong_result" in page.inner_text("#slash-records"), "its reason is a wrong result")
        page.screenshot(path=os.path.join(shots, "cheater.png"), full_page=True)

        # A page updates live when a new block arrives (no reload: the marker survives).
        page.goto(base + "/")
        page.evaluate("window.__marker = 'kept'")
        first = int(page.inner_text("#overview-height"))
        wait_for(
            "the overview to show a new block",
            30,
            lambda: int(page.inner_text("#overview-height")) > first,
        )
        check(page.evaluate("window.__marker") == "kept", "updated without a reload")
        page.screenshot(path=os.path.join(shots, "overview.png"), full_page=True)

        # An order's page shows its bids arriving, then its clearing price.
        next_id = fetch_json(base + "/market")["next_order_id"]
        page.goto(f"{base}/orders/{next_id}")
        check("has not been posted yet" in page.inner_text("main"), "the order is not there yet")
        page.evaluate("window.__marker = 'kept'")
        print(f"READY {next_id}", flush=True)
        posted = int(sys.stdin.readline().strip())
        check(posted == next_id, f"the order posted is {posted}, the page waits for {next_id}")
        seen = []

        def observe():
            bids = page.locator("#bids tbody tr").count()
            cleared = page.locator("#clearing-price").count() > 0
            if not seen or seen[-1] != (bids, cleared):
                seen.append((bids, cleared))
            return cleared

        wait_for("the order's clearing price", 180, observe)
        check(page.evaluate("window.__marker") == "kept", "the order page updated without a reload")
        check(seen[0] == (0, False), f"the page was open before the first bid: {seen}")
        check(
            any(bids > 0 and not cleared for bids, cleared in seen),
            f"bids were shown arriving before the clearing: {seen}",
        )
        clearing = page.inner_text("#clearing-price")
        check("GPU" in clearing, f"clearing price in GPU: {clearing}")
        page.screenshot(path=os.path.join(shots, "order.png"), full_page=True)

        # Search finds the order's transaction by its hash.
        tx_link = page.locator("a.hash[href^='/txs/']").first
        tx_hash = tx_link.get_attribute("href").rsplit("/", 1)[1]
        page.goto(base + "/")
        page.fill("#search", tx_hash.lower())
        page.press("#search", "Enter")
        page.wait_for_url(f"**/txs/{tx_hash}")
        check(page.inner_text("#tx-hash") == tx_hash, "the transaction page of that hash")
        check("auction.post_order" in page.inner_text("main"), "its decoded message")
        page.screenshot(path=os.path.join(shots, "tx.png"), full_page=True)

        # The market page, with its price chart drawn by uPlot.
        page.goto(base + "/market")
        figures["fcp_market_ms"] = first_contentful_paint(page, 3000)
        page.wait_for_selector("#price-chart .uplot canvas", timeout=10_000)
        page.screenshot(path=os.path.join(shots, "market.png"), full_page=True)
        page.goto(base + "/verification")
        check(page.locator("#slashes tbody tr").count() >= 1, "the slash on the verification page")
        check(
            "Serving models" in page.inner_text("#verifiers thead")
            and page.locator("#verifiers tbody tr").count() >= 1,
            "the verifiers with the serving models each judges",
        )
        page.screenshot(path=os.path.join(shots, "verification.png"), full_page=True)

        # Bad input gets a clear page, never a 500.
        for path, status, words in [
            ("/accounts/gpu1notanaddress", 400, "is not an address"),
            ("/providers/xyz", 400, "is not an address"),
            ("/txs/nothex", 400, "is not a transaction hash"),
            ("/txs/" + "AB" * 32, 404, "no block holds transaction"),
            ("/blocks/999999999", 404, "does not exist yet"),
            ("/orders/abc", 400, "is not a valid order id"),
            ("/search?q=999999999", 404, "in the future"),
            ("/search?q=%3Cscript%3E", 400, "not something the explorer can look up"),
            ("/nowhere", 404, "no such page"),
        ]:
            response = page.goto(base + path)
            check(response.status == status, f"{path}: status {response.status}, expected {status}")
            text = page.inner_text("main")
            check(words in text, f"{path}: {words!r} in {text!r}")
        check(not console_errors, f"no script errors: {console_errors}")
        browser.close()
    print("RESULT " + json.dumps(figures), flush=True)


if __name__ == "__main__":
    main()
