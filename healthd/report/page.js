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
  function fixed(v) { return v === null || v === undefined ? "—" : v.toFixed(3); }

  // stages at one instant (a sweep, a commit touching several facts) are one point, the
  // state after all of them: x0 is the first of them, x the last
  function lastAt(series, i) {
    while (i + 1 < series.t.length && series.t[i + 1] === series.t[i]) i++;
    return i;
  }

  function describe(series, i) {
    i = lastAt(series, Math.min(i, series.t.length - 1));
    var first = series.x0 ? series.x0[i] : series.x[i], last = series.x[i];
    var ev = data.events[series.e[i]];
    var parts = first === last ? ["stage " + last, ev[0]]
      : ["stages " + first + "–" + last + " (" + (last - first + 1) + " at this time)",
         "last " + ev[0]];
    if (ev[1]) parts.push(ev[1], ev[2], ev[3]);
    parts.push(ev[4]);
    return parts.join(" · ");
  }

  // spans with no event at all (a dormant repository's idle years): shaded and named, so
  // the held line across them is not read as measured there
  function shadeQuiet(u) {
    var quiet = (u.healthdSeries && u.healthdSeries.quiet) || [];
    if (!quiet.length) return;
    var ctx = u.ctx, top = u.bbox.top, height = u.bbox.height;
    ctx.save();
    ctx.font = Math.round(11 * (window.devicePixelRatio || 1)) + "px sans-serif";
    quiet.forEach(function (span) {
      var x0 = u.valToPos(span[0], "x", true), x1 = u.valToPos(span[1], "x", true);
      ctx.fillStyle = "rgba(120, 120, 120, 0.13)";
      ctx.fillRect(x0, top, x1 - x0, height);
      ctx.fillStyle = "#666";
      if (x1 - x0 > 60) ctx.fillText("no events", x0 + 4, top + 14);
    });
    ctx.restore();
  }

  function markEvents(u) {
    var series = u.healthdSeries, ctx = u.ctx, bottom = u.bbox.top + u.bbox.height;
    var size = Math.max(4, Math.round(6 * (window.devicePixelRatio || 1)));
    ctx.save();
    for (var i = 0; i < series.x.length; i++) {
      var ev = data.events[series.e[i]];
      ctx.fillStyle = EVENT_COLORS[ev[1]] || "#444";
      var cx = Math.round(u.valToPos(series.t[i], "x", true));
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
    var idle = "Hover the chart to name a stage's event. The x axis is event time; ticks along the bottom mark the change events at their time.";
    hover.textContent = idle;
    var defs = [{ label: "event time" }];
    // steps: a value holds from its stage until the next one changes it
    var steps = uPlot.paths.stepped({ align: 1 });
    data.ratios.forEach(function (m) {
      defs.push({ label: m, stroke: COLORS[m], width: 1.5, scale: "ratio", paths: steps,
                  value: function (u, v) { return fixed(v); } });
    });
    defs.push({ label: "conflicts", stroke: COLORS.conflicts, width: 1, dash: [4, 3], scale: "count",
                paths: steps,
                value: function (u, v) { return v === null || v === undefined ? "—" : String(v); } });
    // x is the stage's event time, so spacing is time and each change sits at its moment
    // the final state (the final table's values) held a little past the last stage, so the
    // line visibly ends on it rather than on a vertical step at the edge
    var n = series.t.length;
    var end = series.t[n - 1] + Math.max(3600, Math.round((series.t[n - 1] - series.t[0]) * 0.03));
    function held(values) { return values.concat([values[n - 1]]); }
    var columns = [series.t.concat([end])].concat(
      data.ratios.map(function (m) { return held(series[m]); }), [held(series.conflicts)]);
    var opts = {
      width: Math.max(480, box.clientWidth || 960), height: 300,
      tzDate: function (ts) { return uPlot.tzDate(new Date(ts * 1000), "Etc/UTC"); },
      scales: { x: { time: true }, ratio: { range: [0, 1] },
                count: { range: function (u, lo, hi) { return [0, Math.max(1, hi || 0)]; } } },
      axes: [
        {},
        { scale: "ratio", label: "ratio" },
        { scale: "count", side: 1, label: "conflicts", grid: { show: false } }
      ],
      series: defs,
      cursor: { dataIdx: function (u, s, i) { return lastAt(series, Math.min(i, n - 1)); } },
      hooks: {
        drawClear: [shadeQuiet],
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
    writeView();
  }

  // -- drill-down -------------------------------------------------------------------------
  // data.probes: [target index, domain, id, question, key, expected, facts, facts left out,
  //               served items: [text, asserted, negated, unread, mismatch, invented,
  //                              about another subject (listed apart, after the others)]]
  // facts: [value, status, newest validation, oldest, records, flags, key if another, kinds,
  //         text an invented value was read from]
  // data.failures: [probe slot, [[kind index, layer], ...]]: one row per failing probe
  var rows = data.failures.map(function (f) {
    var p = data.probes[f[0]];
    var target = data.targets[p[0]];
    var bits = 0;
    f[1].forEach(function (k) { bits |= 1 << k[0]; });
    return { target: target.name, baseline: target.role === "baseline", bits: bits,
             kinds: f[1].map(function (k) { return data.kinds[k[0]]; }),
             layers: f[1].map(function (k) { return k[1]; }),
             domain: p[1], id: p[2], question: p[3], key: p[4], expected: p[5],
             facts: p[6], hidden: p[7], served: p[8] || [] };
  });
  var SORT_KEYS = {
    target: function (r) { return r.target; },
    failures: function (r) { return r.bits; },
    domain: function (r) { return r.domain; }, question: function (r) { return r.question; },
    returned: function (r) { return r.facts.length + r.hidden; },
    "true": function (r) { return r.expected.join(", "); }
  };
  var PAGE = 50;
  var page = 0;
  var sort = { column: "target", direction: 1 };
  var baselineBox = document.getElementById("f-baselines");
  // a baseline's failures are what it is for: hidden unless asked for (or picked by name),
  // even when no real target fails; the count under the table says how many are not shown
  baselineBox.checked = false;

  function fillSelect(id, values) {
    var select = document.getElementById(id);
    values.forEach(function (v) { var o = el("option", v); o.value = v; select.appendChild(o); });
    select.addEventListener("change", function () { page = 0; drawFailures(); });
  }

  var FEW = 3;  // entries shown per probe until its row is opened; the rest are counted
  var opened = {};

  function returnedCell(row, bits) {
    var cell = el("td");
    if (!row.facts.length) { cell.appendChild(el("span", "nothing", "none")); return cell; }
    var list = el("ul");
    var open = opened[row.target + "\u0000" + row.id];
    var shown = open ? row.facts : row.facts.slice(0, FEW);
    shown.forEach(function (f) {
      var item = el("li", null, f[7] & bits ? "offending" : "");
      item.appendChild(el("span", f[0], "value"));
      item.appendChild(el("span", f[1], "status status-" + f[1]));
      var when = f[4] > 1 && f[2] !== f[3] ? f[3] + " … " + f[2] : f[2];
      item.appendChild(el("span", "validated " + when, "validated"));
      if (f[4] > 1) item.appendChild(el("span", "× " + f[4] + " records", "count"));
      if (f[5].length) item.appendChild(el("span", f[5].join(", "), "flags"));
      if (f[6]) item.appendChild(el("span", f[6], "key"));
      if (f[8]) item.appendChild(el("q", f[8], "text"));
      list.appendChild(item);
    });
    var more = row.facts.length - shown.length;
    if (more) {
      var button = el("button", "… and " + (more + row.hidden) + " more", "more");
      button.type = "button";
      button.addEventListener("click", function () {
        opened[row.target + "\u0000" + row.id] = true;
        drawFailures();
      });
      var li = el("li", null, "none");
      li.appendChild(button);
      list.appendChild(li);
    } else if (row.hidden) {
      list.appendChild(el("li", "… and " + row.hidden + " more", "none"));
    }
    cell.appendChild(list);
    // the items read for the key, then apart those about another subject (no fact scored)
    var scored = row.served.filter(function (s) { return !s[6]; });
    var elsewhere = row.served.filter(function (s) { return s[6]; });
    if (scored.length) {
      var said = el("ul", null, "served");
      scored.forEach(function (s) {
        var item = el("li", null, s[3] ? "unread" : "");
        item.appendChild(el("q", s[0], "text"));
        var invented = s[5] || [];
        var how = s[3] ? "unread" : [s[1].length ? "asserts " + s[1].join(", ") : "",
          s[2].length ? "negates " + s[2].join(", ") : "",
          invented.length ? "invented " + invented.join(", ") : ""].filter(Boolean).join("; ");
        item.appendChild(el("span", "read as: " + how, "read-as"));
        if (s[4]) item.appendChild(el("span", "metadata disagrees", "flags"));
        said.appendChild(item);
      });
      cell.appendChild(said);
    }
    if (elsewhere.length) {
      var apart = el("ul", null, "served irrelevant");
      apart.title = "retrieved beside the answer, about another subject: not scored as a fact";
      elsewhere.forEach(function (s) {
        var item = el("li", null, "irrelevant");
        item.appendChild(el("q", s[0], "text"));
        item.appendChild(el("span", "about another subject", "read-as"));
        if (s[4]) item.appendChild(el("span", "metadata disagrees", "flags"));
        apart.appendChild(item);
      });
      cell.appendChild(apart);
    }
    return cell;
  }

  function kindsCell(row) {
    var cell = el("td", null, "kind");
    row.kinds.forEach(function (kind, i) {
      var tag = el("span", kind, "tag kind-" + kind);
      if (row.layers[i]) tag.appendChild(el("span", " (" + row.layers[i] + " layer)", "layer"));
      cell.appendChild(tag);
    });
    return cell;
  }

  function drawFailures() {
    var want = {
      target: document.getElementById("f-target").value, kind: document.getElementById("f-kind").value,
      domain: document.getElementById("f-domain").value, layer: document.getElementById("f-layer").value,
      text: document.getElementById("f-text").value.trim().toLowerCase()
    };
    var hiddenBaseline = 0;
    var matching = rows.filter(function (r) {
      var ok = (!want.target || r.target === want.target) &&
        (!want.kind || r.kinds.indexOf(want.kind) >= 0) &&
        (!want.domain || r.domain === want.domain) &&
        (!want.layer || (want.layer === "(none)" ? r.layers.every(function (l) { return !l; })
                                                 : r.layers.indexOf(want.layer) >= 0)) &&
        (!want.text || (r.question + " " + r.key + " " + r.expected.join(" ") + " " +
          r.facts.map(function (f) { return f[0]; }).join(" ")).toLowerCase().indexOf(want.text) >= 0);
      // a target picked by name is shown, baseline or not
      if (ok && r.baseline && !baselineBox.checked && !want.target) { hiddenBaseline++; return false; }
      return ok;
    });
    var key = SORT_KEYS[sort.column];
    var order = matching.map(function (r, i) { return [key(r), i, r]; });
    order.sort(function (a, b) {
      if (a[0] < b[0]) return -sort.direction;
      if (a[0] > b[0]) return sort.direction;
      return a[1] - b[1];
    });
    var pages = Math.max(1, Math.ceil(order.length / PAGE));
    page = Math.min(page, pages - 1);
    var body = document.getElementById("failures-body");
    body.textContent = "";
    order.slice(page * PAGE, (page + 1) * PAGE).forEach(function (item) {
      var r = item[2];
      var tr = el("tr", null, "failure" + (r.baseline ? " baseline" : ""));
      tr.dataset.target = r.target; tr.dataset.kind = r.kinds.join(" ");
      tr.dataset.domain = r.domain; tr.dataset.probe = r.id;
      var who = el("td", r.target);
      if (r.baseline) who.appendChild(el("span", "baseline", "badge baseline"));
      tr.appendChild(who);
      tr.appendChild(kindsCell(r));
      tr.appendChild(el("td", r.domain));
      var q = el("td"); q.appendChild(el("div", r.question)); q.appendChild(el("div", r.key, "key"));
      tr.appendChild(q);
      // what makes it fail is marked: for the failure picked, else for any of its kinds
      tr.appendChild(returnedCell(r, want.kind ? 1 << data.kinds.indexOf(want.kind) : r.bits));
      tr.appendChild(el("td", r.expected.length ? r.expected.join(", ") : "nothing (ended)"));
      body.appendChild(tr);
    });
    document.getElementById("failures-count").textContent =
      matching.length + " of " + rows.length + " failing probes match" +
      (hiddenBaseline ? "; " + hiddenBaseline + " of baselines (meant to fail) not shown" : "");
    document.getElementById("failures-page").textContent = "page " + (page + 1) + " of " + pages;
    document.getElementById("failures-prev").disabled = page === 0;
    document.getElementById("failures-next").disabled = page >= pages - 1;
    document.querySelectorAll("#failures th[data-sort]").forEach(function (th) {
      th.classList.toggle("sorted", th.dataset.sort === sort.column);
      th.dataset.direction = th.dataset.sort === sort.column ? (sort.direction > 0 ? "asc" : "desc") : "";
    });
    writeView();
  }

  function unique(values) {
    var seen = {};
    return values.filter(function (v) { if (!v || seen[v]) return false; seen[v] = true; return true; }).sort();
  }

  fillSelect("f-target", data.targets.map(function (t) { return t.name; }));
  fillSelect("f-kind", data.kinds);
  fillSelect("f-domain", data.buckets.slice(1));
  var layers = unique([].concat.apply([], rows.map(function (r) { return r.layers; })));
  fillSelect("f-layer", layers.length ? ["(none)"].concat(layers) : []);
  document.getElementById("f-text").addEventListener("input", function () { page = 0; drawFailures(); });
  baselineBox.addEventListener("change", function () { page = 0; drawFailures(); });
  document.getElementById("failures-prev").addEventListener("click", function () { page--; drawFailures(); });
  document.getElementById("failures-next").addEventListener("click", function () { page++; drawFailures(); });
  document.querySelectorAll("#failures th[data-sort]").forEach(function (th) {
    th.addEventListener("click", function () {
      sort.direction = sort.column === th.dataset.sort ? -sort.direction : 1;
      sort.column = th.dataset.sort;
      drawFailures();
    });
  });
  document.getElementById("domain").addEventListener("change", drawCharts);

  // -- the view in the page's address -----------------------------------------------------
  // The filters, sort, page and chart domain are kept in the fragment (#target=naive&...),
  // so the daemon's page, which reloads after every run, and a link shared from either page
  // open on the same view. A value the page does not offer is ignored, not shown as a filter.
  var VIEW_SELECTS = { chart: "domain", target: "f-target", kind: "f-kind", domain: "f-domain",
                       layer: "f-layer" };
  var VIEW_KEYS = Object.keys(VIEW_SELECTS).concat(["text", "baselines", "sort", "page"]);
  var MAX_TEXT = 200;
  var viewReady = false;

  // the fragment's view parameters (none: the default view), or null when it names a place
  // on the page instead (#verdict), which is left to the browser
  function viewParams() {
    var fragment = window.location.hash.slice(1), params = new URLSearchParams(fragment);
    return !fragment || VIEW_KEYS.some(function (k) { return params.has(k); }) ? params : null;
  }

  function readView(params) {  // every control from params, the default where it names none
    Object.keys(VIEW_SELECTS).forEach(function (name) {
      var select = document.getElementById(VIEW_SELECTS[name]), value = params.get(name);
      var offered = Array.prototype.some.call(select.options, function (o) { return o.value === value; });
      select.value = value !== null && offered ? value : select.options.length ? select.options[0].value : "";
    });
    document.getElementById("f-text").value = (params.get("text") || "").slice(0, MAX_TEXT);
    baselineBox.checked = params.get("baselines") === "1";
    var column = (params.get("sort") || "").replace(/^-/, "");
    var known = Object.prototype.hasOwnProperty.call(SORT_KEYS, column);
    sort.column = known ? column : "target";
    sort.direction = known && params.get("sort").charAt(0) === "-" ? -1 : 1;
    var number = Number(params.get("page"));
    page = Number.isInteger(number) && number > 1 ? number - 1 : 0;  // drawn, then clamped
  }

  function writeView() {  // after the reader changed the view, not when it was drawn from the address
    if (!viewReady) return;
    var params = new URLSearchParams();
    Object.keys(VIEW_SELECTS).forEach(function (name) {
      var select = document.getElementById(VIEW_SELECTS[name]);  // its first option: the default
      if (select.options.length && select.value !== select.options[0].value) {
        params.set(name, select.value);
      }
    });
    var text = document.getElementById("f-text").value.slice(0, MAX_TEXT);
    if (text) params.set("text", text);
    if (baselineBox.checked) params.set("baselines", "1");
    if (sort.column !== "target" || sort.direction !== 1) {
      params.set("sort", (sort.direction < 0 ? "-" : "") + sort.column);
    }
    if (page > 0) params.set("page", String(page + 1));
    var hash = params.toString();
    if (hash === window.location.hash.slice(1)) return;
    var url = window.location.href.split("#")[0] + (hash ? "#" + hash : "");
    try {
      window.history.replaceState(null, "", url);
    } catch (e) {  // a browser that refuses it for this page's address: the fragment alone
      window.location.replace("#" + hash);
    }
  }

  function showView(params) {
    viewReady = false;
    readView(params);
    drawCharts();
    drawFailures();
    viewReady = true;
  }

  showView(viewParams() || new URLSearchParams(""));
  // a view's address pasted into the tab, or the browser's back and forward: that view
  window.addEventListener("hashchange", function () {
    var params = viewParams();
    if (params) showView(params);
  });
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
