"""First contentful paint of the explorer's providers and market pages, in headless Chromium
(Debian's package, driven by Playwright): a fresh page for each load, the two pages
alternated, seven loads each after one warm-up; prints the median and the spread.
Run by tests/examples/explorer_load.rs:

    python explorer_load.py EXPLORER_URL [SCREENSHOT_DIR]
"""

import shutil
import statistics
import sys
import os

from playwright.sync_api import sync_playwright

from explorer_paint import first_contentful_paint


def main():
    base = sys.argv[1]
    chromium = os.environ.get("GPUCHAIN_CHROMIUM") or shutil.which("chromium")
    times = {"/providers": [], "/market": []}
    sizes = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        for round_ in range(8):
            for path in times:
                page = browser.new_page(viewport={"width": 1360, "height": 1000})
                response = page.goto(base + path)
                value = first_contentful_paint(page, 5000)
                sizes[path] = len(response.body())
                if round_ > 0 and value is not None:
                    times[path].append(value)
                page.close()
        if len(sys.argv) > 2:
            # Pictures of the large market for the README.
            page = browser.new_page(viewport={"width": 1360, "height": 900})
            page.goto(base + "/providers?sort=price&dir=asc")
            page.screenshot(path=os.path.join(sys.argv[2], "explorer-providers-1000.png"))
            page.goto(base + "/market")
            page.screenshot(path=os.path.join(sys.argv[2], "explorer-market-10000.png"))
            page.close()
        browser.close()
    for path, values in times.items():
        print(
            f"first contentful paint {path}: median {statistics.median(values):.0f} ms, "
            f"min {min(values):.0f}, max {max(values):.0f} over {len(values)} loads "
            f"({sizes[path] // 1024} KiB of HTML)"
        )


if __name__ == "__main__":
    main()
