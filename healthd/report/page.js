/* healthd report page: draws the charts and the drill-down from the embedded page model. */
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("healthd-data").textContent);
  var COLORS = {
    freshness: "#1b9e77", consistency: "#d95f02", coverage: "#7570b3",
    forgetting: "#e7298a", contamination: "#a6761d", conflicts: "#555555"
  };
  var EVENT_COLORS = {
    added: "#2a9d3a", revised: "#1f6fd1", invalidated: "#d62728", revalidated: "#9a9a9a"
  };
  var charts = [];
  window.healthdCharts = charts;

  function el(tag, text, cls) {
    var node = document.createElement(tag);
    if (text !== undefined && text !== null) node.textContent = String(text);
    if (cls) node.className = cls;
    return node;
  }
  function day(seconds) { return new Date(seconds * 1000).toISOString().slice(0, 10); }
  function fixed(v) { return v === null || v === undefined ? "—" : v.toFixed(3); }

  function timeAt(series, x) {
    var lo = 0, hi = series.x.length - 1;
    if (hi < 0) return 0;
    while (lo < hi) {
      var mid = (lo + hi) >> 1;
      if (series.x[mid] < x) lo = mid + 1; else hi = mid;
    }
    return series.t[lo];
  }

  function describe(series, i) {
    var ev = data.events[series.e[i]];
    var parts = ["stage " + series.x[i], ev[0]];
    if (ev[1]) parts.push(ev[1], ev[2], ev[3]);
    parts.push(ev[4]);
    return parts.join(" · ");
  }

  function markEvents(u) {
    var series = u.healthdSeries, ctx = u.ctx, bottom = u.bbox.top + u.bbox.height;
    var size = Math.max(4, Math.round(6 * (window.devicePixelRatio || 1)));
    ctx.save();
    for (var i = 0; i < series.x.length; i++) {
      var ev = data.events[series.e[i]];
      ctx.fillStyle = EVENT_COLORS[ev[1]] || "#444";
      var cx = Math.round(u.valToPos(series.x[i], "x", true));
      ctx.fillRect(cx - 1, bottom - size, 2, size);
    }
    ctx.restore();
  }

  function drawChart(index, bucket) {
    var target = data.targets[index];
    var series = target.series[bucket];
    var box = document.querySelector('.chart[data-target="' + index + '"]');
    var hover = document.querySelector('.hover[data-target="' + index + '"]');
    if (charts[index]) { charts[index].destroy(); charts[index] = null; }
    box.textContent = "";
    if (!series.x.length) { box.textContent = "no events replayed"; return; }
    var idle = "Hover the chart to name a stage's event. Ticks along the bottom mark the change events.";
    hover.textContent = idle;
    var defs = [{ label: "stage" }];
    data.ratios.forEach(function (m) {
      defs.push({ label: m, stroke: COLORS[m], width: 1.5, scale: "ratio",
                  value: function (u, v) { return fixed(v); } });
    });
    defs.push({ label: "conflicts", stroke: COLORS.conflicts, width: 1, dash: [4, 3], scale: "count",
                value: function (u, v) { return v === null || v === undefined ? "—" : String(v); } });
    var columns = [series.x].concat(data.ratios.map(function (m) { return series[m]; }), [series.conflicts]);
    var opts = {
      width: Math.max(480, box.clientWidth || 960), height: 300,
      scales: { x: { time: false }, ratio: { range: [0, 1] },
                count: { range: function (u, lo, hi) { return [0, Math.max(1, hi || 0)]; } } },
      axes: [
        { values: function (u, splits) { return splits.map(function (v) { return day(timeAt(series, v)); }); } },
        { scale: "ratio", label: "ratio" },
        { scale: "count", side: 1, label: "conflicts", grid: { show: false } }
      ],
      series: defs,
      hooks: {
        draw: [markEvents],
        setCursor: [function (u) {
          var i = u.cursor.idx;
          hover.textContent = i === null || i === undefined ? idle : describe(series, i);
        }]
      }
    };
    var chart = new uPlot(opts, columns, box);
    chart.healthdSeries = series;
    charts[index] = chart;
  }

  function drawCharts() {
    var bucket = document.getElementById("domain").value;
    for (var i = 0; i < data.targets.length; i++) drawChart(i, bucket);
  }

  // -- drill-down -------------------------------------------------------------------------
  var COLUMNS = ["target", "kind", "domain", "question", "returned", "true", "layer"];
  var SORT_KEYS = {
    target: function (r) { return r[0]; }, kind: function (r) { return data.kinds.indexOf(r[1]); },
    domain: function (r) { return r[2]; }, question: function (r) { return r[4]; },
    returned: function (r) { return r[7].length; }, "true": function (r) { return r[6].join(", "); },
    layer: function (r) { return r[8]; }
  };
  var SHOWN_AT_MOST = 2000;
  var sort = { column: "target", direction: 1 };

  function fillSelect(id, values) {
    var select = document.getElementById(id);
    values.forEach(function (v) { var o = el("option", v); o.value = v; select.appendChild(o); });
    select.addEventListener("change", drawFailures);
  }

  function returnedCell(row) {
    var cell = el("td");
    if (!row[7].length) { cell.appendChild(el("span", "nothing", "none")); return cell; }
    var list = el("ul");
    row[7].forEach(function (f) {
      var item = el("li", null, f[4] ? "offending" : "");
      item.appendChild(el("span", f[0], "value"));
      item.appendChild(el("span", f[1], "status status-" + f[1]));
      item.appendChild(el("span", "validated " + f[2], "validated"));
      if (f[3].length) item.appendChild(el("span", f[3].join(", "), "flags"));
      if (f[5] !== row[5]) item.appendChild(el("span", f[5], "key"));
      list.appendChild(item);
    });
    cell.appendChild(list);
    return cell;
  }

  function drawFailures() {
    var want = {
      target: document.getElementById("f-target").value, kind: document.getElementById("f-kind").value,
      domain: document.getElementById("f-domain").value, layer: document.getElementById("f-layer").value,
      text: document.getElementById("f-text").value.trim().toLowerCase()
    };
    var rows = data.failures.filter(function (r) {
      return (!want.target || r[0] === want.target) && (!want.kind || r[1] === want.kind) &&
        (!want.domain || r[2] === want.domain) &&
        (!want.layer || (want.layer === "(none)" ? !r[8] : r[8] === want.layer)) &&
        (!want.text || (r[4] + " " + r[5] + " " + r[6].join(" ") +
          " " + r[7].map(function (f) { return f[0]; }).join(" ")).toLowerCase().indexOf(want.text) >= 0);
    });
    var key = SORT_KEYS[sort.column];
    var order = rows.map(function (r, i) { return [key(r), i, r]; });
    order.sort(function (a, b) {
      if (a[0] < b[0]) return -sort.direction;
      if (a[0] > b[0]) return sort.direction;
      return a[1] - b[1];
    });
    var body = document.getElementById("failures-body");
    body.textContent = "";
    order.slice(0, SHOWN_AT_MOST).forEach(function (item) {
      var r = item[2];
      var tr = el("tr", null, "failure kind-" + r[1]);
      tr.dataset.target = r[0]; tr.dataset.kind = r[1]; tr.dataset.domain = r[2]; tr.dataset.probe = r[3];
      tr.appendChild(el("td", r[0]));
      tr.appendChild(el("td", r[1], "kind"));
      tr.appendChild(el("td", r[2]));
      var q = el("td"); q.appendChild(el("div", r[4])); q.appendChild(el("div", r[5], "key"));
      tr.appendChild(q);
      tr.appendChild(returnedCell(r));
      tr.appendChild(el("td", r[6].length ? r[6].join(", ") : "nothing (ended)"));
      tr.appendChild(el("td", r[8]));
      body.appendChild(tr);
    });
    var count = document.getElementById("failures-count");
    count.textContent = rows.length + " of " + data.failures.length + " failures match" +
      (rows.length > SHOWN_AT_MOST ? "; showing the first " + SHOWN_AT_MOST + ", narrow the filters to see the rest" : "");
    document.querySelectorAll("#failures th[data-sort]").forEach(function (th) {
      th.classList.toggle("sorted", th.dataset.sort === sort.column);
      th.dataset.direction = th.dataset.sort === sort.column ? (sort.direction > 0 ? "asc" : "desc") : "";
    });
  }

  function unique(values) {
    var seen = {};
    return values.filter(function (v) { if (!v || seen[v]) return false; seen[v] = true; return true; }).sort();
  }

  fillSelect("f-target", data.targets.map(function (t) { return t.name; }));
  fillSelect("f-kind", data.kinds);
  fillSelect("f-domain", data.buckets.slice(1));
  var layers = unique(data.failures.map(function (r) { return r[8]; }));
  fillSelect("f-layer", layers.length ? ["(none)"].concat(layers) : []);
  document.getElementById("f-text").addEventListener("input", drawFailures);
  document.querySelectorAll("#failures th[data-sort]").forEach(function (th) {
    th.addEventListener("click", function () {
      sort.direction = sort.column === th.dataset.sort ? -sort.direction : 1;
      sort.column = th.dataset.sort;
      drawFailures();
    });
  });
  document.getElementById("domain").addEventListener("change", drawCharts);
  drawCharts();
  drawFailures();
  document.body.dataset.ready = "yes";
  if (data.live) {  // the daemon's page: reload once a run has finished
    window.setInterval(function () {
      fetch("/last-run", { cache: "no-store" })
        .then(function (r) { return r.ok ? r.text() : null; })
        .then(function (m) { if (m && m !== data.live.marker) window.location.reload(); })
        .catch(function () {});
    }, 3000);
  }
})();
