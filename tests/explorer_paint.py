"""First contentful paint of the page a Playwright page just loaded: shared by the explorer's
browser test (explorer_browser.py) and its load figures (explorer_load.py)."""

FCP_JS = """wait => new Promise(resolve => {
    const got = performance.getEntriesByName('first-contentful-paint');
    if (got.length) return resolve(got[0].startTime);
    new PerformanceObserver(list => {
        const e = list.getEntriesByName('first-contentful-paint');
        if (e.length) resolve(e[0].startTime);
    }).observe({type: 'paint', buffered: true});
    setTimeout(() => resolve(null), wait);
})"""


def first_contentful_paint(page, wait_ms):
    """In ms, or None when the page has not painted within `wait_ms`."""
    return page.evaluate(FCP_JS, wait_ms)
