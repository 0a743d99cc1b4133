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
  // data.probes: [target index, domain, id, question, key, expected, facts, facts left out,
  //               served items: [text, asserted, negated, unread, mismatch]]
  // facts: [value, status, newest validation, oldest, records, flags, key if another, kinds]
  // data.failures: [probe slot, kind index, layer]
  var rows = data.failures.map(function (f) {
    var p = data.probes[f[0]];
    return { target: data.targets[p[0]].name, kind: data.kinds[f[1]], bit: 1 << f[1],
             domain: p[1], id: p[2], question: p[3], key: p[4], expected: p[5],
             facts: p[6], hidden: p[7], served: p[8] || [], layer: f[2] };
  });
  var SORT_KEYS = {
    target: function (r) { return r.target; }, kind: function (r) { return data.kinds.indexOf(r.kind); },
    domain: function (r) { return r.domain; }, question: function (r) { return r.question; },
    returned: function (r) { return r.facts.length + r.hidden; },
    "true": function (r) { return r.expected.join(", "); }, layer: function (r) { return r.layer; }
  };
  var PAGE = 300;
  var shown = PAGE;
  var sort = { column: "target", direction: 1 };

  function fillSelect(id, values) {
    var select = document.getElementById(id);
    values.forEach(function (v) { var o = el("option", v); o.value = v; select.appendChild(o); });
    select.addEventListener("change", function () { shown = PAGE; drawFailures(); });
  }

  function returnedCell(row) {
    var cell = el("td");
    if (!row.facts.length) { cell.appendChild(el("span", "nothing", "none")); return cell; }
    var list = el("ul");
    row.facts.forEach(function (f) {
      var item = el("li", null, f[7] & row.bit ? "offending" : "");
      item.appendChild(el("span", f[0], "value"));
      item.appendChild(el("span", f[1], "status status-" + f[1]));
      var when = f[4] > 1 && f[2] !== f[3] ? f[3] + " … " + f[2] : f[2];
      item.appendChild(el("span", "validated " + when, "validated"));
      if (f[4] > 1) item.appendChild(el("span", "× " + f[4] + " records", "count"));
      if (f[5].length) item.appendChild(el("span", f[5].join(", "), "flags"));
      if (f[6]) item.appendChild(el("span", f[6], "key"));
      list.appendChild(item);
    });
    if (row.hidden) list.appendChild(el("li", "… and " + row.hidden + " more", "none"));
    cell.appendChild(list);
    if (row.served.length) {
      var said = el("ul", null, "served");
      row.served.forEach(function (s) {
        var item = el("li", null, s[3] ? "unread" : "");
        item.appendChild(el("q", s[0], "text"));
        var how = s[3] ? "unread" : [s[1].length ? "asserts " + s[1].join(", ") : "",
          s[2].length ? "negates " + s[2].join(", ") : ""].filter(Boolean).join("; ");
        item.appendChild(el("span", "read as: " + how, "read-as"));
        if (s[4]) item.appendChild(el("span", "metadata disagrees", "flags"));
        said.appendChild(item);
      });
      cell.appendChild(said);
    }
    return cell;
  }

  function drawFailures() {
    var want = {
      target: document.getElementById("f-target").value, kind: document.getElementById("f-kind").value,
      domain: document.getElementById("f-domain").value, layer: document.getElementById("f-layer").value,
      text: document.getElementById("f-text").value.trim().toLowerCase()
    };
    var matching = rows.filter(function (r) {
      return (!want.target || r.target === want.target) && (!want.kind || r.kind === want.kind) &&
        (!want.domain || r.domain === want.domain) &&
        (!want.layer || (want.layer === "(none)" ? !r.layer : r.layer === want.layer)) &&
        (!want.text || (r.question + " " + r.key + " " + r.expected.join(" ") + " " +
          r.facts.map(function (f) { return f[0]; }).join(" ")).toLowerCase().indexOf(want.text) >= 0);
    });
    var key = SORT_KEYS[sort.column];
    var order = matching.map(function (r, i) { return [key(r), i, r]; });
    order.sort(function (a, b) {
      if (a[0] < b[0]) return -sort.direction;
      if (a[0] > b[0]) return sort.direction;
      return a[1] - b[1];
    });
    var body = document.getElementById("failures-body");
    body.textContent = "";
    order.slice(0, shown).forEach(function (item) {
      var r = item[2];
      var tr = el("tr", null, "failure kind-" + r.kind);
      tr.dataset.target = r.target; tr.dataset.kind = r.kind; tr.dataset.domain = r.domain; tr.dataset.probe = r.id;
      tr.appendChild(el("td", r.target));
      tr.appendChild(el("td", r.kind, "kind"));
      tr.appendChild(el("td", r.domain));
      var q = el("td"); q.appendChild(el("div", r.question)); q.appendChild(el("div", r.key, "key"));
      tr.appendChild(q);
      tr.appendChild(returnedCell(r));
      tr.appendChild(el("td", r.expected.length ? r.expected.join(", ") : "nothing (ended)"));
      tr.appendChild(el("td", r.layer));
      body.appendChild(tr);
    });
    document.getElementById("failures-count").textContent =
      matching.length + " of " + rows.length + " failures match" +
      (matching.length > shown ? "; showing " + shown : "");
    document.getElementById("failures-more").hidden = matching.length <= shown;
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
  var layers = unique(rows.map(function (r) { return r.layer; }));
  fillSelect("f-layer", layers.length ? ["(none)"].concat(layers) : []);
  document.getElementById("f-text").addEventListener("input", function () { shown = PAGE; drawFailures(); });
  document.getElementById("failures-more").addEventListener("click", function () { shown += PAGE; drawFailures(); });
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
