/* precision_tool HTML report: the NPU graph as a DAG, coloured by where the error enters.
 *
 * Reads the JSON element #graph-data (precision_tool/reports/html/graph_data.py documents its fields),
 * groups ops into their name scopes (a/b/op is in scope a, then a/b), and draws the scopes that fit as
 * collapsed boxes: at most VISIBLE_LIMIT boxes are laid out, which keeps a 5,000-op graph readable and its
 * layout fast. The layout is dagre's (dagre.min.js, inlined before this script). Clicking a scope opens it;
 * clicking an op shows its tensors and links to its table row. The culprit's scopes start open.
 * Markup is built with createElementNS/textContent only: names from a dump never become markup.
 * ``?op=NAME`` in the address finds NAME (as the search box does) when the page opens, so a link can point at an op.
 * On success #graph-view gets data-rendered="1", data-nodes, data-layout-ms and data-render-ms (ms since the
 * page started loading); an error sets data-status="error" on <body>, as report.js does.
 */
(function () {
  "use strict";
  var VISIBLE_LIMIT = 300;  // boxes laid out at first (dagre takes ~0.3 s for 300 in a browser)
  var HARD_LIMIT = 1200;    // boxes a click may open up to (dagre's recursion fails near 2,000 in a chain)
  var CHUNK = 40;           // a scope with more direct members is split into runs of consecutive ops
  var SVG = "http://www.w3.org/2000/svg";
  var CONSTANT_TYPES = { Const: 1, Constant: 1, Variable: 1, VariableV2: 1, VarHandleOp: 1 };
  var showConstants = false;  // weights and other constants: most of a CNN's ops, none of them compared
  var view = document.getElementById("graph-view");
  var source = document.getElementById("graph-data");
  if (!view || !source) { return; }

  function fail(error) {
    document.body.setAttribute("data-status", "error");
    document.body.setAttribute("data-error", "graph view: " + String((error && error.message) || error));
  }

  function el(name, attrs, parent) {
    var node = document.createElementNS(SVG, name);
    Object.keys(attrs || {}).forEach(function (key) { node.setAttribute(key, attrs[key]); });
    if (parent) { parent.appendChild(node); }
    return node;
  }

  function html(name, text, parent, cls) {
    var node = document.createElement(name);
    if (text !== undefined && text !== null) { node.textContent = text; }
    if (cls) { node.className = cls; }
    if (parent) { parent.appendChild(node); }
    return node;
  }

  // ------------------------------------------------------------------ scopes
  var data, ops, scopes = [], top;

  function Scope(path, label, parent) {
    this.id = scopes.length;
    this.path = path;
    this.label = label;
    this.parent = parent;
    this.members = [];  // {op: k} or {scope: Scope}, in execution order
    this.named = Object.create(null);
    this.count = 0;     // ops below, at any depth
    this.first = Infinity;
    this.open = false;
    scopes.push(this);
  }

  function isConstant(op) {
    return Object.prototype.hasOwnProperty.call(CONSTANT_TYPES, op.t) && !op["in"].length && op.k === "none";
  }

  function buildScopes() {
    scopes = [];
    top = new Scope("", "", null);
    top.open = true;
    ops.forEach(function (op, k) {
      if (!showConstants && isConstant(op)) { op.scope = null; return; }
      var parts = op.n.split("/"), scope = top;
      for (var i = 0; i < parts.length - 1; i++) {
        var key = parts[i];
        if (!scope.named[key]) {
          var child = new Scope(scope.path ? scope.path + "/" + key : key, key, scope);
          scope.named[key] = child;
          scope.members.push({ scope: child });
        }
        scope = scope.named[key];
      }
      scope.members.push({ op: k });
      op.scope = scope;
      for (var s = scope; s; s = s.parent) { s.count += 1; s.first = Math.min(s.first, k); }
    });
    scopes.slice().forEach(chunk);
  }

  function firstOf(member) { return member.op !== undefined ? member.op : member.scope.first; }

  function chunk(scope) {
    scope.members.sort(function (a, b) { return firstOf(a) - firstOf(b); });
    if (scope.members.length <= CHUNK) { return; }
    var size = Math.ceil(scope.members.length / CHUNK), runs = [];
    for (var i = 0; i < scope.members.length; i += size) {
      var part = scope.members.slice(i, i + size);
      var run = new Scope(scope.path, (scope.label || "graph") + " [" + (i + 1) + "-" + (i + part.length) + "]", scope);
      run.members = part;
      part.forEach(function (member) {
        if (member.op !== undefined) { ops[member.op].scope = run; } else { member.scope.parent = run; }
        run.count += member.op !== undefined ? 1 : member.scope.count;
        run.first = Math.min(run.first, firstOf(member));
      });
      runs.push({ scope: run });
    }
    scope.members = runs;
    runs.forEach(function (member) { chunk(member.scope); });
  }

  function visibleMembers() {
    var shown = [];
    (function walk(scope) {
      scope.members.forEach(function (member) {
        if (member.scope && member.scope.open) { walk(member.scope); } else { shown.push(member); }
      });
    })(top);
    return shown;
  }

  function openAncestors(k) {  // returns whether a scope was closed (the drawing must change)
    var opened = false;
    for (var s = ops[k].scope; s; s = s.parent) { opened = opened || !s.open; s.open = true; }
    return opened;
  }

  /* The "selected" and "found" marks moved to the op now chosen, on the drawing as it is: choosing an op moves no
   * box, so it needs no new layout (dagre's layout is what a redraw costs). */
  function mark() {
    Array.prototype.forEach.call(canvas.querySelectorAll(".node.selected, .node.found"), function (node) {
      node.classList.remove("selected", "found");
    });
    var chosen = selected === null ? null : canvas.querySelector('[data-index="' + selected + '"]');
    if (chosen) {
      chosen.classList.add("selected");
      if (found.length && found[foundAt] === selected) { chosen.classList.add("found"); }
    }
  }

  /* The culprit's scopes first, whatever they cost; then scopes level by level, outermost first, while the boxes
   * stay within VISIBLE_LIMIT (a scope holding one member opens for free). */
  function initialOpen() {
    ops.forEach(function (op, k) { if (op.c && op.scope) { openAncestors(k); } });
    var shown = visibleMembers().length, level = [top];
    while (level.length) {
      var next = [];
      level.forEach(function (scope) {
        scope.members.forEach(function (member) {
          if (!member.scope) { return; }
          if (!member.scope.open) {
            var extra = member.scope.members.length - 1;
            if (shown + extra > VISIBLE_LIMIT && extra > 0) { return; }
            member.scope.open = true;
            shown += extra;
          }
          next.push(member.scope);
        });
      });
      level = next;
    }
  }

  // ------------------------------------------------------------------ colours
  function colourOf(value, status) {
    if (status === "none") { return "#e5e7eb"; }
    if (status === "error") { return "#fde68a"; }  // amber: a dump of the op could not be read
    if (value === null || value === undefined) { return status === "fail" ? "#fecaca" : "#dcfce7"; }
    var t = data.colour_by === "local" ? Math.log(Math.max(value, 1e-12)) / Math.LN10 / 2
                                       : (Math.log(Math.max(value, 1e-12)) / Math.LN10 + 4) / 3;
    t = Math.max(0, Math.min(1, t));
    return "hsl(" + Math.round(120 * (1 - t)) + ", 70%, " + (status === "fail" ? 68 : 78) + "%)";
  }

  var RANK = { fail: 3, error: 2, pass: 1, none: 0 };

  function scopeSummary(scope) {
    var worst = null, status = "none", culprit = false, overflow = false;
    (function walk(s) {
      s.members.forEach(function (member) {
        if (member.scope) { walk(member.scope); return; }
        var op = ops[member.op];
        if (RANK[op.k] > RANK[status]) { status = op.k; }
        if (op.v !== null && (worst === null || op.v > worst)) { worst = op.v; }
        culprit = culprit || !!op.c;
        overflow = overflow || !!op.o;
      });
    })(scope);
    return { value: worst, status: status, culprit: culprit, overflow: overflow };
  }

  // ------------------------------------------------------------------ drawing
  var canvas, panel, status, zoom = 1, found = [], foundAt = -1, selected = null, centred = false;

  function shortName(name) {  // the op's own name and its innermost scope: res_conv_1/convolution
    var parts = name.split("/");
    return parts.slice(-2).join("/");
  }

  function centre(node) {  // scroll the drawing (not the page) so that node is in the middle
    var box = node.getBoundingClientRect(), frame = canvas.getBoundingClientRect();
    canvas.scrollLeft += box.left + box.width / 2 - (frame.left + frame.width / 2);
    canvas.scrollTop += box.top + box.height / 2 - (frame.top + frame.height / 2);
  }

  function boxWidth(label) { return Math.max(90, Math.min(280, 7 * label.length + 24)); }

  function draw() {
    var started = performance.now();
    var members = visibleMembers(), idOf = {}, g = new dagre.graphlib.Graph();
    g.setGraph({ rankdir: "TB", nodesep: 18, ranksep: 34, marginx: 12, marginy: 12 });
    g.setDefaultEdgeLabel(function () { return {}; });
    members.forEach(function (member) {
      var id, label, sub;
      if (member.op !== undefined) {
        var op = ops[member.op];
        id = "o" + member.op;
        label = shortName(op.n);
        sub = (op.t || "") + (op.tf.length > 1 ? " \u00b7 fuses " + op.tf.length + " TF ops" : "");
        idOf[member.op] = id;
      } else {
        id = "s" + member.scope.id;
        label = (member.scope.label || member.scope.path) + "/";
        sub = member.scope.count + (member.scope.count === 1 ? " op" : " ops") + "  +";
      }
      g.setNode(id, { member: member, label: label, sub: sub, width: boxWidth(label.length > sub.length ? label : sub),
                      height: 36 });
    });
    function repOf(k) {  // the box op k is drawn in: itself, or its outermost closed scope (null: hidden)
      if (!ops[k].scope) { return null; }
      var box = idOf[k];
      for (var s = ops[k].scope; s && s !== top; s = s.parent) { if (!s.open) { box = "s" + s.id; } }
      return box;
    }
    var reps = ops.map(function (op, k) { return repOf(k); });
    ops.forEach(function (op, k) {
      op["in"].forEach(function (p) {
        var from = reps[p], to = reps[k];
        if (from && to && from !== to && !g.hasEdge(from, to)) { g.setEdge(from, to); }
      });
    });
    var laid = performance.now();
    dagre.layout(g);
    var layoutMs = performance.now() - laid;
    render(g);
    view.setAttribute("data-rendered", "1");
    view.setAttribute("data-nodes", String(g.nodeCount()));
    view.setAttribute("data-layout-ms", String(Math.round(layoutMs)));
    view.setAttribute("data-render-ms", String(Math.round(performance.now())));
    status.textContent = g.nodeCount() + " boxes of " + ops.length + " ops; laid out in " +
      Math.round(performance.now() - started) + " ms. Click a scope (dashed) to open it, an op for its tensors.";
  }

  function render(g) {
    while (canvas.firstChild) { canvas.removeChild(canvas.firstChild); }
    var size = g.graph();
    var svg = el("svg", { width: Math.ceil(size.width * zoom), height: Math.ceil(size.height * zoom),
                          viewBox: "0 0 " + Math.ceil(size.width) + " " + Math.ceil(size.height),
                          "class": "graph-svg", role: "group", "aria-label": "NPU graph" }, canvas);
    var defs = el("defs", {}, svg);
    var marker = el("marker", { id: "graph-arrow", viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 7,
                                markerHeight: 7, orient: "auto-start-reverse" }, defs);
    el("path", { d: "M0 0L10 5L0 10z", fill: "#94a3b8" }, marker);
    var edges = el("g", { "class": "edges" }, svg);
    g.edges().forEach(function (e) {
      var points = g.edge(e).points || [];
      var d = points.map(function (p, i) { return (i ? "L" : "M") + p.x.toFixed(1) + " " + p.y.toFixed(1); }).join("");
      el("path", { d: d, fill: "none", stroke: "#94a3b8", "stroke-width": 1.2, "marker-end": "url(#graph-arrow)" },
         edges);
    });
    var nodes = el("g", { "class": "nodes" }, svg);
    g.nodes().forEach(function (id) {
      var n = g.node(id), member = n.member, classes, fill, info;
      var box = el("g", { transform: "translate(" + (n.x - n.width / 2).toFixed(1) + "," + (n.y - n.height / 2).toFixed(1)
                                     + ")", tabindex: 0 }, nodes);
      if (member.op !== undefined) {
        var op = ops[member.op];
        info = { value: op.v, status: op.k, culprit: !!op.c, overflow: !!op.o };
        classes = "node op " + op.k;
        box.setAttribute("data-op", op.n);
        box.setAttribute("data-index", String(member.op));
      } else {
        info = scopeSummary(member.scope);
        classes = "node scope " + info.status;
        box.setAttribute("data-scope", member.scope.path);
        box.setAttribute("data-ops", String(member.scope.count));
      }
      if (info.culprit) { classes += " culprit"; }
      if (info.overflow) { classes += " overflow"; }
      if (selected !== null && member.op === selected) { classes += " selected"; }
      if (member.op !== undefined && found.length && found[foundAt] === member.op) { classes += " found"; }
      box.setAttribute("class", classes);
      fill = colourOf(info.value, info.status);
      el("rect", { width: n.width, height: n.height, rx: member.op !== undefined ? 5 : 9, fill: fill }, box);
      var title = el("title", {}, box);
      title.textContent = member.op !== undefined
        ? ops[member.op].n + (ops[member.op].tf.length > 1 ? "\nfuses: " + ops[member.op].tf.join(", ") : "")
        : member.scope.path + " (" + member.scope.count + " ops; click to open)";
      var name = el("text", { x: 8, y: 15, "class": "label" }, box);
      name.textContent = n.label.length > 38 ? n.label.slice(0, 17) + "..." + n.label.slice(-18) : n.label;
      var sub = el("text", { x: 8, y: 29, "class": "sub" }, box);
      sub.textContent = n.sub;
      if (info.overflow) { el("path", { d: "M" + (n.width - 14) + " 3L" + (n.width - 3) + " 3L" + (n.width - 8.5) + " 12z",
                                         "class": "overflow-mark" }, box); }
      box.addEventListener("click", function () { activate(member); });
      box.addEventListener("keydown", function (event) {
        if (event.key === "Enter" || event.key === " ") { event.preventDefault(); activate(member); }
      });
    });
    var culprit = canvas.querySelector(".culprit");
    if (culprit && !centred) { centre(culprit); }  // the first drawing only: later ones keep the user's place
    centred = true;
  }

  /* Open ``scope`` if the boxes stay within HARD_LIMIT, else say so (dagre's layout recurses: a few thousand
   * boxes in a chain exhaust the stack). Returns whether it opened. */
  function openScope(scope) {
    var after = visibleMembers().length + scope.members.length - 1;
    if (after > HARD_LIMIT) {
      status.textContent = "opening " + (scope.path || scope.label) + " would draw " + after + " boxes (at most " +
        HARD_LIMIT + "): close some scopes first (\"close all scopes\"), or find the op by name";
      return false;
    }
    scope.open = true;
    return true;
  }

  function activate(member) {
    if (member.scope) {
      if (openScope(member.scope)) { safeDraw(); }
      return;
    }
    selected = member.op;
    show(member.op);
    mark();
  }

  function rescale() {  // zoom: the same layout, drawn larger or smaller
    var svg = canvas.querySelector("svg");
    if (!svg) { return; }
    var box = svg.getAttribute("viewBox").split(" ");
    svg.setAttribute("width", String(Math.ceil(Number(box[2]) * zoom)));
    svg.setAttribute("height", String(Math.ceil(Number(box[3]) * zoom)));
  }

  function safeDraw() {  // a failed layout leaves a message, not a stale picture that claims success
    try {
      draw();
    } catch (error) {
      status.textContent = "the graph could not be drawn: " + ((error && error.message) || error);
      fail(error);
    }
  }

  function fmt(value, digits) {
    return value === null || value === undefined ? "-" : Number(value).toPrecision(digits || 4);
  }

  function show(k) {
    var op = ops[k];
    while (panel.firstChild) { panel.removeChild(panel.firstChild); }
    html("h3", op.n, panel);
    var lines = ["type " + (op.t || "?") + ", " + { fail: "fails", pass: "passes", error: "unreadable",
                 none: "not compared" }[op.k]];
    if (op.c) { lines.push("the verdict's culprit"); }
    if (op.tf.length) { lines.push("TF ops: " + op.tf.join(", ")); }
    if (op.p.length) { lines.push("fusion passes: " + op.p.join(", ")); }
    if (op.o) { lines.push(op.o); }
    if (op.s) { lines.push(op.s); }
    lines.forEach(function (line) { html("p", line, panel); });
    if (op.x.length) {
      var table = html("table", null, panel, "plain");
      var head = html("tr", null, html("thead", null, table));
      ["tensor", "cosine", "local", "inherited", "total", "shape", "layout"].forEach(function (h) { html("th", h, head); });
      var body = html("tbody", null, table);
      op.x.forEach(function (t) {
        var row = html("tr", null, body);
        var own = t[0].indexOf(op.n + ":") === 0 ? t[0].slice(op.n.length + 1) : t[0];  // output:0, not the name again
        [own, fmt(t[1], 6), fmt(t[2], 3), fmt(t[3], 3), fmt(t[4], 3), "[" + t[5].join(", ") + "]", t[6]].forEach(
          function (cell) { html("td", cell, row); });
      });
    }
    if (op.r !== null && document.getElementById("row-" + op.r)) {  // not on a --graph-only page
      var link = html("a", "jump to its row in the table", html("p", null, panel));
      link.href = "#row-" + op.r;
    }
  }

  function rebuild() {  // scopes again from scratch: constants shown or hidden, every scope closed
    found = []; selected = null;
    while (panel.firstChild) { panel.removeChild(panel.firstChild); }
    buildScopes();
    initialOpen();
    safeDraw();
  }

  function search(needle) {
    needle = needle.trim().toLowerCase();
    if (!needle) { found = []; foundAt = -1; safeDraw(); return; }
    var same = found.length && search.last === needle;
    if (!same) {
      var exact = [], partial = [], hidden = 0;
      ops.forEach(function (op, k) {
        var name = op.n.toLowerCase();
        if (name.indexOf(needle) < 0) { return; }
        if (!op.scope) { hidden += 1; return; }
        (name === needle ? exact : partial).push(k);
      });
      found = exact.concat(partial);  // an exact name first: ?op=a/Relu is a/Relu, not a/Relu_1
      foundAt = -1;
      search.last = needle;
      search.hidden = hidden;
    }
    if (!found.length) {
      status.textContent = search.hidden ? "'" + needle + "' matches only constants: tick \"show constants\""
                                         : "no op matches '" + needle + "'";
      return;
    }
    foundAt = (foundAt + 1) % found.length;
    var opened = openAncestors(found[foundAt]);
    selected = found[foundAt];
    show(selected);
    if (opened || !canvas.querySelector('[data-index="' + selected + '"]')) { safeDraw(); } else { mark(); }
    status.textContent = "match " + (foundAt + 1) + " of " + found.length + " (Enter: next)";
    var node = canvas.querySelector('[data-index="' + found[foundAt] + '"]');
    if (node) { centre(node); }
  }

  function controls() {
    var bar = document.getElementById("graph-controls");
    var input = html("input", null, bar);
    input.type = "search";
    input.id = "graph-search";
    input.placeholder = "Find an op by name (Enter: next match)";
    input.addEventListener("keydown", function (event) { if (event.key === "Enter") { search(input.value); } });
    [["-", 1 / 1.25], ["+", 1.25]].forEach(function (pair) {
      var button = html("button", pair[0], bar);
      button.type = "button";
      button.title = pair[0] === "+" ? "zoom in" : "zoom out";
      button.addEventListener("click", function () { zoom *= pair[1]; rescale(); });
    });
    var reset = html("button", "close all scopes", bar);
    reset.type = "button";
    reset.addEventListener("click", rebuild);
    var constantsLabel = html("label", null, bar);
    var constants = html("input", null, constantsLabel);
    constants.type = "checkbox";
    constants.id = "graph-constants";
    constantsLabel.appendChild(document.createTextNode(" show constants (" + ops.filter(isConstant).length + ")"));
    constants.addEventListener("change", function () { showConstants = constants.checked; rebuild(); });
    status = html("span", "", bar, "meta");
    status.id = "graph-status";
  }

  try {
    data = JSON.parse(source.textContent);
    ops = data.ops;
    canvas = document.getElementById("graph-canvas");
    panel = document.getElementById("graph-panel");
    controls();
    buildScopes();
    initialOpen();
    draw();
    var asked = new URLSearchParams(window.location.search).get("op");  // report.html?op=NAME: a shareable view
    if (asked) {
      document.getElementById("graph-search").value = asked;
      search(asked);
    }
  } catch (error) {
    if (status) { status.textContent = "the graph could not be drawn: " + ((error && error.message) || error); }
    fail(error);
  }
})();
