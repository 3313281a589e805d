// gpuchain explorer: live updates, copy buttons and charts. Pages are complete without it;
// it swaps the page's live region when a new block arrives (server-sent events on /live) and
// draws the charts the server describes in data-chart attributes with uPlot.
"use strict";

(function () {
  function drawCharts(root) {
    root.querySelectorAll("div.chart[data-chart]").forEach(function (el) {
      if (typeof uPlot === "undefined") {
        el.textContent = "Charts need uPlot: run scripts/fetch-explorer-assets.sh and restart the explorer.";
        return;
      }
      var spec = JSON.parse(el.getAttribute("data-chart"));
      var xs = [];
      spec.series.forEach(function (s) { s.points.forEach(function (p) { xs.push(p[0]); }); });
      xs = Array.from(new Set(xs)).sort(function (a, b) { return a - b; });
      var index = new Map(xs.map(function (x, i) { return [x, i]; }));
      var data = [xs];
      var series = [{ label: spec.x }];
      var palette = ["#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c", "#0891b2", "#4b5563"];
      spec.series.forEach(function (s, i) {
        var ys = xs.map(function () { return null; });
        s.points.forEach(function (p) { ys[index.get(p[0])] = p[1]; });
        data.push(ys);
        series.push({ label: s.label, stroke: palette[i % palette.length], width: 2, spanGaps: true,
                      points: { show: true, size: 5 } });
      });
      el.textContent = "";
      new uPlot({
        width: Math.max(320, Math.min(el.clientWidth || 900, 1100)), height: 260,
        scales: { x: { time: false } },
        axes: [{ label: spec.x }, { label: spec.y }],
        series: series,
      }, data, el);
    });
  }

  document.addEventListener("click", function (e) {
    var button = e.target.closest("button.copy");
    if (!button) return;
    var text = button.getAttribute("data-copy");
    var done = function () {
      button.classList.add("copied");
      setTimeout(function () { button.classList.remove("copied"); }, 1200);
    };
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(done, done);
    } else {
      var area = document.createElement("textarea");
      area.value = text;
      document.body.appendChild(area);
      area.select();
      try { document.execCommand("copy"); } catch (_) { /* nothing to copy to */ }
      area.remove();
      done();
    }
  });

  var refreshing = false, again = false;
  function refresh(height) {
    var head = document.getElementById("head-height");
    if (head) head.textContent = height;
    if (refreshing) { again = true; return; }
    refreshing = true;
    fetch(location.href, { headers: { Accept: "text/html" } })
      .then(function (r) { return r.text(); })
      .then(function (text) {
        var doc = new DOMParser().parseFromString(text, "text/html");
        var fresh = doc.getElementById("live");
        var current = document.getElementById("live");
        if (fresh && current) {
          current.innerHTML = fresh.innerHTML;
          var title = doc.querySelector("main h1");
          var h1 = document.querySelector("main h1");
          if (title && h1) h1.textContent = title.textContent;
          drawCharts(current);
          document.dispatchEvent(new CustomEvent("explorer:updated", { detail: { height: height } }));
        }
      })
      .catch(function () { /* the next block tries again */ })
      .finally(function () {
        refreshing = false;
        if (again) { again = false; refresh(height); }
      });
  }

  function live() {
    if (!window.EventSource) return;
    var source = new EventSource("/live");
    source.addEventListener("block", function (e) { refresh(e.data); });
    document.documentElement.setAttribute("data-live", "on");
  }

  document.addEventListener("DOMContentLoaded", function () {
    drawCharts(document);
    live();
  });
})();
