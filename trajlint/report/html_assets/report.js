"use strict";
(function () {
  var data = JSON.parse(document.getElementById("report-data").textContent);
  var SVG = "http://www.w3.org/2000/svg";
  var rows = document.getElementById("rows");
  var fRule = document.getElementById("f-rule"), fSev = document.getElementById("f-severity");
  var fFile = document.getElementById("f-file"), fText = document.getElementById("f-text");
  var shown = document.getElementById("f-shown");

  function el(tag, cls, text) {
    var node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }
  function svg(tag, attrs) {
    var node = document.createElementNS(SVG, tag);
    for (var k in attrs) node.setAttribute(k, String(attrs[k]));
    return node;
  }

  var files = [];
  var seen = {};
  data.findings.forEach(function (f) { if (!seen[f.path]) { seen[f.path] = true; files.push(f.path); } });
  files.sort().forEach(function (p) { var o = el("option", null, p); o.value = p; fFile.appendChild(o); });

  // The table grows a page at a time: building thousands of rows up front would slow the
  // page's opening for rows nobody scrolls to.
  var PAGE = 200;
  var matched = [], limit = PAGE;
  var more = document.getElementById("rows-more");

  function rowOf(f) {
    var tr = el("tr");
    tr.dataset.code = f.code;
    tr.dataset.severity = f.severity;
    tr.appendChild(el("td", null, f.sample !== null ? "▸" : ""));
    var sevCell = el("td"); sevCell.appendChild(el("span", "sev " + f.severity, f.severity)); tr.appendChild(sevCell);
    tr.appendChild(el("td", null, f.code + " " + f.name));
    tr.appendChild(el("td", "loc", f.line ? f.path + ":" + f.line : f.path));
    tr.appendChild(el("td", "msg", f.message));
    tr.appendChild(el("td", "ptr", f.pointer));
    if (f.sample !== null) {
      tr.className = "openable";
      tr.title = "open this row";
      tr.addEventListener("click", function () { openSample(f.sample, f.pointer); });
    }
    return tr;
  }

  function fill() {
    var frag = document.createDocumentFragment();
    for (var i = rows.children.length; i < Math.min(limit, matched.length); i++) frag.appendChild(rowOf(matched[i]));
    rows.appendChild(frag);
    var left = matched.length - rows.children.length;
    more.hidden = left <= 0;
    more.textContent = "show " + Math.min(left, PAGE) + " more (" + left + " not shown)";
  }

  function render() {
    var rule = fRule.value, sev = fSev.value, file = fFile.value, text = fText.value.toLowerCase();
    matched = data.findings.filter(function (f) {
      if (rule && f.code !== rule) return false;
      if (sev && f.severity !== sev) return false;
      if (file && f.path !== file) return false;
      return !text || (f.code + " " + f.name + " " + f.message + " " + f.pointer + " " + f.path).toLowerCase().indexOf(text) >= 0;
    });
    rows.dataset.matched = matched.length;
    rows.textContent = "";
    limit = PAGE;
    fill();
    shown.textContent = matched.length + " of " + data.findings.length + " match";
  }
  more.addEventListener("click", function () { limit += PAGE; fill(); });
  [fRule, fSev, fFile].forEach(function (s) { s.addEventListener("change", render); });
  fText.addEventListener("input", render);
  render();

  // ---- drill-down ----
  var drill = document.getElementById("drill");
  document.getElementById("drill-close").addEventListener("click", function () { drill.hidden = true; });
  document.addEventListener("keydown", function (e) { if (e.key === "Escape") drill.hidden = true; });

  function tree(nodes, into) {
    nodes.forEach(function (node) {
      var li = el("li", "node-" + node.type);
      li.appendChild(el("span", "lbl", node.label));
      if (node.detail) li.appendChild(el("span", "tag", node.detail));
      if (node.type === "call") {
        li.appendChild(el("span", "tag", node.outcome + (node.owner ? " of " + node.owner : "")));
        if (node.conflict) li.appendChild(el("span", "tag conflict", node.conflict));
      }
      if (node.children && node.children.length) {
        var ul = el("ul");
        tree(node.children, ul);
        li.appendChild(ul);
      }
      into.appendChild(li);
    });
  }

  function graph(g, into) {
    into.textContent = "";
    if (!g.calls.length && !g.owners.length) { into.appendChild(el("p", "muted", "no model calls and no claims")); return; }
    var rowH = 30, nodeH = 22, ownerW = 210, callW = 230, gap = 170;
    var width = ownerW + gap + callW + 20;
    var height = Math.max(g.owners.length, g.calls.length) * rowH + 20;
    var root = svg("svg", { width: width, height: height, viewBox: "0 0 " + width + " " + height, "class": "ledger" });
    root.dataset.owners = g.owners.length;
    root.dataset.calls = g.calls.length;
    function clip(text, n) { text = String(text); return text.length > n ? text.slice(0, n - 1) + "…" : text; }
    var perPair = {};
    g.edges.forEach(function (e) {
      var key = e.owner + ":" + e.call;
      var k = perPair[key] = (perPair[key] || 0) + 1;
      var y1 = 10 + e.owner * rowH + nodeH / 2 + (k - 1) * 4 - 2, y2 = 10 + e.call * rowH + nodeH / 2 + (k - 1) * 4 - 2;
      var x1 = 10 + ownerW, x2 = 10 + ownerW + gap;
      var path = svg("path", {
        d: "M" + x1 + "," + y1 + " C" + (x1 + gap / 2) + "," + y1 + " " + (x2 - gap / 2) + "," + y2 + " " + x2 + "," + y2,
        stroke: data.claimColours[e.kind] || "#57606a",
        "class": "edge" + (e.conflict ? " conflict" : "") + (e.valid ? "" : " invalid")
      });
      path.dataset.kind = e.kind;
      var t = svg("title", {}); t.textContent = e.kind + " claim at " + e.pointer + (e.valid ? "" : " (record fails its schema)") + (e.conflict ? "; in conflict" : "");
      path.appendChild(t);
      root.appendChild(path);
    });
    function box(x, y, w, label, title, cls) {
      var group = svg("g", { "class": cls, transform: "translate(" + x + "," + y + ")" });
      group.appendChild(svg("rect", { width: w, height: nodeH, rx: 5 }));
      var text = svg("text", { x: 8, y: 15 }); text.textContent = clip(label, Math.floor(w / 7));
      group.appendChild(text);
      var t = svg("title", {}); t.textContent = title; group.appendChild(t);
      root.appendChild(group);
    }
    g.owners.forEach(function (o, i) { box(10, 10 + i * rowH, ownerW, o.label, o.label + " (" + o.kinds.join(", ") + ")", "node owner"); });
    g.calls.forEach(function (c, i) {
      box(10 + ownerW + gap, 10 + i * rowH, callW, c.label + " → " + c.outcome, c.title + ": " + c.outcome + (c.conflict ? "; " + c.conflict : ""), "node call" + (c.conflict ? " conflict" : ""));
    });
    into.appendChild(root);
    if (g.calls_left_out) into.appendChild(el("p", "muted", g.calls_left_out + " more calls not drawn"));
  }

  function esc(token) { return String(token).replace(/~/g, "~0").replace(/\//g, "~1"); }
  function json(value, pointer, indent, into) {
    var wrap = el("span");
    wrap.dataset.pointer = pointer;
    if (Array.isArray(value) || (value !== null && typeof value === "object")) {
      var isArray = Array.isArray(value);
      var keys = isArray ? value.map(function (_, i) { return i; }) : Object.keys(value);
      wrap.appendChild(document.createTextNode(isArray ? "[" : "{"));
      keys.forEach(function (key, n) {
        wrap.appendChild(document.createTextNode("\n" + indent + "  "));
        if (!isArray) { wrap.appendChild(el("span", "k", JSON.stringify(String(key)))); wrap.appendChild(document.createTextNode(": ")); }
        json(value[key], pointer + "/" + esc(key), indent + "  ", wrap);
        if (n < keys.length - 1) wrap.appendChild(document.createTextNode(","));
      });
      wrap.appendChild(document.createTextNode((keys.length ? "\n" + indent : "") + (isArray ? "]" : "}")));
    } else {
      var cls = typeof value === "string" ? "s" : typeof value === "number" ? "n" : "l";
      wrap.className = cls;
      wrap.textContent = JSON.stringify(value);
    }
    into.appendChild(wrap);
  }

  function highlight(pre, pointer) {
    var nodes = pre.querySelectorAll("[data-pointer]");
    var byPointer = {};
    for (var i = 0; i < nodes.length; i++) byPointer[nodes[i].dataset.pointer] = nodes[i];
    var p = pointer || "";
    while (!(p in byPointer) && p.length) p = p.slice(0, p.lastIndexOf("/"));
    var target = byPointer[p];
    var old = pre.querySelectorAll(".hl");
    for (var j = 0; j < old.length; j++) old[j].classList.remove("hl");
    if (target && p !== "") {
      target.classList.add("hl");
      pre.scrollTop = Math.max(0, target.offsetTop - pre.offsetTop - 60);
    }
  }

  function openSample(index, pointer) {
    var s = data.samples[index];
    drill.hidden = false;
    drill.dataset.sample = index;
    document.getElementById("drill-title").textContent = s.path + ":" + s.line + (s.view && s.view.rollout_id ? "  (rollout " + s.view.rollout_id + ")" : "");
    var problem = document.getElementById("drill-problem");
    problem.hidden = !s.problem;
    problem.textContent = s.problem || "";
    var list = document.getElementById("drill-findings");
    list.textContent = "";
    var pre = document.getElementById("drill-json");
    s.findings.forEach(function (f) {
      var li = el("li");
      li.appendChild(el("span", "sev " + f.severity, f.severity));
      li.appendChild(document.createTextNode(" " + f.code + " " + f.name + " " + f.message + " "));
      if (f.pointer) {
        var a = el("a", null, f.pointer);
        a.addEventListener("click", function () { highlight(pre, f.pointer); });
        li.appendChild(a);
      }
      list.appendChild(li);
    });
    if (s.findings_left_out) list.appendChild(el("li", "muted", s.findings_left_out + " more findings on this row"));
    var treeRoot = document.getElementById("drill-tree");
    treeRoot.textContent = "";
    var counts = document.getElementById("drill-counts");
    var graphRoot = document.getElementById("drill-graph");
    if (s.view) {
      var c = s.view.counts;
      counts.textContent = [[c.invocations, "invocation"], [c.turns, "turn"], [c.model_calls, "model call"], [c.tool_calls, "tool call"], [c.unresolved, "unresolved claim"]].map(function (p) { return p[0] + " " + p[1] + (p[0] === 1 ? "" : "s"); }).join(", ");
      tree(s.view.tree, treeRoot);
      if (!s.view.tree.length) treeRoot.appendChild(el("li", "muted", "nothing was built"));
      graph(s.view.graph, graphRoot);
    } else {
      counts.textContent = "no build";
      graphRoot.textContent = "";
    }
    pre.textContent = "";
    json(s.row, "", "", pre);
    highlight(pre, pointer);
    drill.scrollTop = 0;
  }
  window.trajlintOpenSample = openSample;
})();
