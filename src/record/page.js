// The timeline page's script: reads the run from #run-data and draws the
// tree and timeline grid, the db, the events and the source at the
// selected tick. Nothing is fetched; everything is worked out from the
// starting db and each tick's changes.
(function () {
  "use strict";

  var data = JSON.parse(document.getElementById("run-data").textContent);
  var trees = data.trees;
  // A tick: [tree, status, steps, states, input, events, changes].
  var ticks = data.ticks;
  var T = ticks.length;
  var LETTER = { s: "success", f: "failure", r: "running", e: "error", k: "skipped", h: "halted", i: "idle" };
  var MARK = { launch: "▲", cancel: "✕", dropped: "⊘", warning: "⚠", error: "!", input: "●", trim: "✂", reload: "↻", migrated: "↻" };
  var $ = function (id) { return document.getElementById(id); };

  function esc(text) {
    return String(text).replace(/[&<>"]/g, function (c) {
      return { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" }[c];
    });
  }

  // ---- Rows: every node of every tree, in tree order. ----
  // A row is one node across the trees of the run (a trim or a reload
  // makes a new tree): the node with the same id, or the id it was renamed
  // from (`renamed`, from the reload's report). row.nodes[tree] is the
  // node's index in that tree.
  var rows = [];
  var rowById = new Map();
  trees.forEach(function (tree, ti) {
    var renamed = new Map(tree.renamed || []);
    var taken = new Set();
    var previous = null;
    tree.nodes.forEach(function (n, ni) {
      var row = null;
      var names = renamed.has(n[0]) ? [renamed.get(n[0]), n[0]] : [n[0]];
      for (var k = 0; k < names.length && !row; k++) {
        var found = rowById.get(names[k]);
        if (found && !taken.has(found)) { row = found; }
      }
      if (!row) {
        row = { id: n[0], nodes: [] };
        // A node new in a later tree goes right after the node before it there.
        rows.splice(previous ? rows.indexOf(previous) + 1 : 0, 0, row);
      }
      row.nodes[ti] = ni;
      row.id = n[0];
      taken.add(row);
      rowById.set(n[0], row);
      previous = row;
    });
  });
  rows.forEach(function (r, i) { r.index = i; });
  // The row's node id in tree ti (its latest id when the tree lacks it).
  function idIn(row, ti) {
    var i = row.nodes[ti];
    return i === undefined ? row.id : trees[ti].nodes[i][0];
  }
  function rowDepthHint(row) {
    for (var t = 0; t < trees.length; t++) {
      var i = row.nodes[t];
      if (i !== undefined) { return trees[t].nodes[i][2]; }
    }
    return 0;
  }
  function selectedRow() {
    return sel.node === null ? null : rowById.get(sel.node) || null;
  }

  // ---- Node states per tick, decoded on demand. ----
  var decoded = new Map();
  function states(t) {
    var s = decoded.get(t);
    if (s) { return s; }
    if (decoded.size > 4000) { decoded.clear(); }
    s = [];
    var text = ticks[t - 1][3];
    var at = -1, num = 0;
    for (var i = 0; i < text.length; i++) {
      var c = text.charCodeAt(i);
      if (c >= 48 && c <= 57) { num = num * 10 + (c - 48); }
      else { at += num || 1; num = 0; s[at] = LETTER[text[i]] || "none"; }
    }
    decoded.set(t, s);
    return s;
  }
  // The state of a row's node at tick t: a status, "none", or "gone" when
  // that tick's tree has no such node.
  function stateAt(row, t) {
    var i = row.nodes[ticks[t - 1][0]];
    if (i === undefined) { return "gone"; }
    return states(t)[i] || "none";
  }
  // The last state of each row before tick t, for rows not ticked at t.
  function lastStates(t, wanted) {
    var out = new Map();
    var left = wanted.length;
    for (var u = t - 1; u >= 1 && left > 0 && t - u <= 5000; u--) {
      for (var w = 0; w < wanted.length; w++) {
        var row = wanted[w];
        if (out.has(row)) { continue; }
        var st = stateAt(row, u);
        if (st !== "none" && st !== "gone") { out.set(row, st); left--; }
      }
    }
    return out;
  }

  // ---- The db at any tick, from checkpoints and changes. ----
  var EVERY = 256;
  var checkpoints = [new Map(data.start)];
  // A value is its EDN text, or, once edited in a few places ("E", then
  // "e"), its entries: {open, entries: Map of key text to value text} for a
  // map, {open, items: [text]} for a vector or list. Entries are copied
  // before an edit, never changed in place: checkpoints share them.
  var CLOSE = { "{": "}", "[": "]", "(": ")" };
  function textOf(v) {
    if (v === undefined || typeof v === "string") { return v; }
    if (v.entries) {
      return "{" + Array.from(v.entries).map(function (e) { return e[0] + " " + e[1]; }).join(", ") + "}";
    }
    return v.open + v.items.join(" ") + CLOSE[v.open];
  }
  function apply(db, t) {
    var changes = ticks[t - 1][6];
    for (var i = 0; i < changes.length; i++) {
      var c = changes[i], v;
      if (c[0] === "-") { db.delete(c[1]); }
      else if (c[0] === "++") { v = textOf(db.get(c[1])) || "[]"; db.set(c[1], v.slice(0, -1) + " " + c[2] + v.slice(-1)); }
      else if (c[0] === "E") {
        db.set(c[1], c[2] === "{" ? { open: "{", entries: new Map(c[3]) } : { open: c[2], items: c[3].slice() });
      } else if (c[0] === "e") {
        v = db.get(c[1]);
        if (v && v.entries) {
          var m = new Map(v.entries);
          c[2].forEach(function (e) { if (e[1] === null) { m.delete(e[0]); } else { m.set(e[0], e[1]); } });
          db.set(c[1], { open: "{", entries: m });
        } else if (v && v.items) {
          var items = v.items.slice();
          c[2].forEach(function (e) { items[parseInt(e[0], 10)] = e[1]; });
          db.set(c[1], { open: v.open, items: items });
        }
      }
      else { db.set(c[1], c[2]); }
    }
  }
  function dbAt(n) {
    var k = Math.floor(n / EVERY);
    while (checkpoints.length <= k) {
      var c = checkpoints.length;
      var m = new Map(checkpoints[c - 1]);
      for (var t = (c - 1) * EVERY + 1; t <= c * EVERY; t++) { apply(m, t); }
      checkpoints.push(m);
    }
    var db = new Map(checkpoints[k]);
    for (var u = k * EVERY + 1; u <= n; u++) { apply(db, u); }
    return db;
  }

  // ---- Selection and the window of ticks the grid shows. ----
  var sel = { tick: T > 0 ? 1 : 0, node: null };
  var win = { start: 1, size: 0 };
  var shownTree = -1;
  var grid = $("grid");

  // Columns are 18px wide, wider (up to 30px) when a short run leaves room.
  var column = 18;
  function windowSize() {
    var label = parseInt(getComputedStyle(document.documentElement).getPropertyValue("--label"), 10) || 400;
    var room = Math.max(grid.clientWidth - label - 24, 180);
    column = Math.max(18, Math.min(30, Math.floor(room / Math.max(T, 1))));
    grid.style.setProperty("--col", column + "px");
    grid.style.setProperty("--cellw", (column - 4) + "px");
    return Math.max(10, Math.min(T, Math.floor(room / column)));
  }

  function marksOf(t) {
    var tick = ticks[t - 1];
    var kinds = [];
    if (tick[4] !== null) { kinds.push("input"); }
    tick[5].forEach(function (e) {
      if (MARK[e[0]] && kinds.indexOf(e[0]) < 0) { kinds.push(e[0]); }
    });
    return kinds;
  }

  function renderGrid() {
    var size = windowSize();
    if (sel.tick < win.start || sel.tick >= win.start + size || size !== win.size) {
      win.start = Math.max(1, Math.min(sel.tick - Math.floor(size / 4), T - size + 1));
    }
    win.size = size;
    var end = Math.min(T, win.start + size - 1);
    var html = ['<div class="row head"><div class="corner">tree</div>'];
    var every = T <= 30 ? 1 : T >= 1000 ? 10 : 5;
    for (var t = win.start; t <= end; t++) {
      var marks = marksOf(t).map(function (k) {
        return '<b class="mk ' + k + '" title="' + k + '">' + MARK[k] + "</b>";
      }).join("");
      var label = t === 1 || t % every === 0 ? t : "";
      html.push('<div class="th" data-tick="' + t + '" title="tick ' + t + ": " + ticks[t - 1][1] +
        '"><span class="n">' + label + '</span><span class="marks">' + marks + "</span></div>");
    }
    html.push("</div>");
    // Per tick, the markers that belong to a node's cell.
    var cellMarks = [];
    for (var u = win.start; u <= end; u++) {
      var m = new Map();
      ticks[u - 1][5].forEach(function (e) {
        if (e[1] !== null && (e[0] === "launch" || e[0] === "cancel" || e[0] === "dropped" || e[0] === "warning" || e[0] === "error")) {
          m.set(e[1], MARK[e[0]]);
        }
      });
      cellMarks.push(m);
    }
    rows.forEach(function (row, r) {
      html.push('<div class="row" data-row="' + r + '">' + labelHtml(row));
      for (var t = win.start; t <= end; t++) {
        var st = stateAt(row, t);
        var id = idIn(row, ticks[t - 1][0]);
        var mark = cellMarks[t - win.start].get(id) || "";
        if (st === "gone") {
          html.push('<div class="cell gone" data-node-id="' + esc(id) + '" data-tick="' + t +
            '" data-status="none"></div>');
        } else {
          html.push('<div class="cell" data-node-id="' + esc(id) + '" data-tick="' + t +
            '" data-status="' + st + '" title="' + esc(id) + " at tick " + t + ": " + st + '">' +
            mark + "</div>");
        }
      }
      html.push("</div>");
    });
    grid.innerHTML = html.join("");
    shownTree = -1;
    // The elements updated at every step, found once.
    rowEls = Array.from(grid.querySelectorAll(".row[data-row]"));
    nodeEls = rowEls.map(function (el) { return el.querySelector(".node"); });
    columnEls = [];
    for (var c = win.start; c <= end; c++) { columnEls.push([]); }
    grid.querySelectorAll("[data-tick]").forEach(function (el) {
      columnEls[+el.dataset.tick - win.start].push(el);
    });
    selectedEls = [];
  }
  var rowEls = [], nodeEls = [], columnEls = [], selectedEls = [];

  // A node's label, shaped like the EDN it was written as.
  function labelHtml(row) {
    return '<div class="node" data-node-id="' + esc(row.id) + '" data-status="none">' +
      '<span class="dot"></span><span class="code"></span><span class="st"></span></div>';
  }

  function fillLabels(treeIndex) {
    var tree = trees[treeIndex];
    var nodes = tree.nodes;
    rowEls.forEach(function (el, r) {
      var row = rows[r];
      var i = row.nodes[treeIndex];
      var code = el.querySelector(".code");
      nodeEls[r].dataset.nodeId = idIn(row, treeIndex);
      el.classList.toggle("absent", i === undefined);
      if (i === undefined) {
        el.querySelector(".node").style.paddingLeft = (10 + rowDepthHint(row) * 16) + "px";
        code.innerHTML = '<span class="id">' + esc(row.id) + "</span>";
        return;
      }
      var n = nodes[i];
      var next = i + 1 < nodes.length ? nodes[i + 1][2] : 0;
      var closers = n[2] >= next ? n[2] - next + 1 : 0;
      el.querySelector(".node").style.paddingLeft = (10 + n[2] * 16) + "px";
      code.innerHTML = '<span class="br">[</span><span class="ty">' + esc(n[1]) + '</span> <span class="id">' +
        esc(n[0]) + "</span>" + (n[5] ? ' <span class="opts">' + esc(n[5]) + "</span>" : "") +
        (closers ? '<span class="br">' + "]".repeat(closers) + "</span>" : "");
      el.querySelector(".node").title = n[1] + " " + n[0] + (n[5] ? " " + n[5] : "") +
        (n[4] ? "  (line " + n[4] + ")" : "");
    });
    shownTree = treeIndex;
  }

  function update() {
    if (T === 0) { return; }
    var began = performance.now();
    var t = sel.tick;
    if (t < win.start || t > win.start + win.size - 1 || windowSize() !== win.size) { renderGrid(); }
    var tick = ticks[t - 1];
    if (shownTree !== tick[0]) { fillLabels(tick[0]); }
    // A selected node is named by its id in this tick's tree.
    var chosen = selectedRow();
    if (chosen) { sel.node = idIn(chosen, tick[0]); }

    selectedEls.forEach(function (el) { el.classList.remove("sel"); });
    selectedEls = columnEls[t - win.start] || [];
    selectedEls.forEach(function (el) { el.classList.add("sel"); });

    var quiet = [];
    rowEls.forEach(function (el, r) {
      var row = rows[r];
      var st = stateAt(row, t);
      var node = nodeEls[r];
      node.dataset.status = st === "gone" ? "none" : st;
      el.classList.toggle("sel", row === chosen);
      if (st === "none") { quiet.push(row); }
      node.querySelector(".st").textContent = st === "gone" ? "" : st === "none" ? "" : st;
      node.style.removeProperty("--last");
    });
    var last = lastStates(t, quiet);
    quiet.forEach(function (row) {
      var el = nodeEls[row.index];
      var st = last.get(row);
      if (el && st) {
        el.style.setProperty("--last", "var(--" + st + ")");
        el.querySelector(".st").textContent = "· " + st;
      }
    });

    $("ticknum").value = t;
    $("tickcount").textContent = "of " + T;
    $("tickstatus").dataset.status = tick[1];
    $("tickstatus").textContent = tick[1];
    $("ticksteps").textContent = tick[2] + " steps";
    renderDb(t);
    renderEvents(t);
    renderSource(tick[0]);
    drawOverview();
    writeHash();
    document.body.dataset.stepMs = String(Math.round(performance.now() - began));
  }

  // ---- The db pane. ----
  var aidoOpen = false;
  function renderDb(t) {
    var before = dbAt(t - 1), now = dbAt(t);
    var keys = Array.from(new Set(Array.from(before.keys()).concat(Array.from(now.keys()))));
    keys.sort(function (a, b) { return a < b ? -1 : a > b ? 1 : 0; });
    var mine = [], aido = [], changed = 0, aidoChanged = 0;
    keys.forEach(function (k) {
      var was = textOf(before.get(k)), is = textOf(now.get(k));
      var kind = was === undefined ? "added" : is === undefined ? "removed" : was === is ? "same" : "changed";
      var sign = { added: "+", removed: "-", changed: "~", same: "" }[kind];
      var value = kind === "removed" ? esc(was) : kind === "changed"
        ? '<span class="old">' + esc(was) + '</span><span class="arrow">→</span>' + esc(is) : esc(is);
      var html = '<div class="kv ' + kind + '"><span class="sign">' + sign + '</span><span class="k">' +
        esc(k) + '</span><span class="v">' + value + "</span></div>";
      if (k.indexOf(":aido/") === 0) { aido.push(html); if (kind !== "same") { aidoChanged++; } }
      else { mine.push(html); if (kind !== "same") { changed++; } }
    });
    $("dbsummary").textContent = "at tick " + t + " · " + changed + " changed";
    $("db").innerHTML = (mine.length ? mine.join("") : '<div class="empty">no keys</div>') +
      (aido.length ? '<details class="aido"' + (aidoOpen ? " open" : "") + "><summary>:aido/* keys · " +
        aido.length + (aidoChanged ? " · " + aidoChanged + " changed" : "") + "</summary>" + aido.join("") +
        "</details>" : "");
    var details = $("db").querySelector("details");
    if (details) { details.addEventListener("toggle", function () { aidoOpen = details.open; }); }
  }

  // ---- The events pane. ----
  function renderEvents(t) {
    var tick = ticks[t - 1];
    var items = [];
    if (tick[4] !== null) {
      items.push('<li><span class="kind input">input</span><span class="text">' + esc(tick[4]) +
        "</span><span></span></li>");
    }
    tick[5].forEach(function (e) {
      var node = e[1] !== null ? ' data-node-id="' + esc(e[1]) + '"' : "";
      // The text without the kind its badge already shows.
      var text = e[2] !== null ? e[2] : e[0] + " " + e[1];
      if (text.indexOf(e[0] + " ") === 0) { text = text.slice(e[0].length + 1); }
      items.push("<li" + node + '><span class="kind ' + esc(e[0]) + '">' + esc(e[0]) + '</span><span class="text">' +
        esc(text) + "</span>" + (e[3] !== null ? '<span class="line"' + node + ">line " + e[3] + "</span>" : "<span></span>") +
        "</li>");
    });
    $("events").innerHTML = items.length ? items.join("") : '<li class="empty">nothing happened besides the visits</li>';
  }

  // ---- The source pane. ----
  function renderSource(treeIndex) {
    var tree = trees[treeIndex];
    var chosen = selectedRow();
    var i = chosen ? chosen.nodes[treeIndex] : undefined;
    var n = i === undefined ? null : tree.nodes[i];
    // A node from an included file is shown in that file's source.
    var file = tree.files && n && n[8] ? tree.files[n[8]] : null;
    $("srcname").textContent = file ? file[0] : (tree.name || "");
    $("nodeinfo").innerHTML = n
      ? "<b>" + esc(n[1]) + "</b> " + esc(n[0]) + (n[5] ? " " + esc(n[5]) : "") + (n[4] ? " · line " + n[4] : "") +
        " · at tick " + sel.tick + ": <b>" + esc(stateAt(chosen, sel.tick)) + "</b>"
      : "select a node to see it in its source";
    var box = $("source");
    if (tree.source === null) {
      box.innerHTML = '<span class="none">no source text: this version of the tree was built from data (a trim, or a tree made in code)</span>';
      return;
    }
    // One block a line, the selected node's span marked within them.
    var text = file ? file[1] : tree.source;
    var from = n && n[6] !== null ? n[6] : -1, to = n && n[6] !== null ? n[7] : -1;
    var html = [], start = 0;
    text.split("\n").forEach(function (line) {
      var end = start + line.length;
      var a = Math.max(from, start) - start, b = Math.min(to, end) - start;
      html.push('<span class="ln">' + (a < b || (a === b && from <= start && to > end)
        ? esc(line.slice(0, a)) + "<mark>" + esc(line.slice(a, b)) + "</mark>" + esc(line.slice(b))
        : esc(line)) + "</span>");
      start = end + 1;
    });
    box.innerHTML = html.join("");
    var mark = box.querySelector("mark");
    var pane = box;
    if (mark) {
      var below = mark.getBoundingClientRect().top - pane.getBoundingClientRect().top;
      pane.scrollTop = Math.max(0, pane.scrollTop + below - pane.clientHeight / 3);
    }
  }

  // ---- The overview strip: the root's status at every tick. ----
  var overview = $("overview");
  var strip = null; // the statuses drawn once, at the strip's size
  function drawOverview() {
    var dpr = window.devicePixelRatio || 1;
    var w = overview.clientWidth, h = overview.clientHeight;
    if (!w) { return; }
    var pw = Math.round(w * dpr), ph = Math.round(h * dpr);
    if (!strip || strip.width !== pw || strip.height !== ph) {
      strip = document.createElement("canvas");
      strip.width = pw;
      strip.height = ph;
      var s = strip.getContext("2d");
      s.scale(dpr, dpr);
      var css = getComputedStyle(document.documentElement);
      var colour = {};
      ["success", "failure", "running", "error", "skipped", "halted", "idle"].forEach(function (st) {
        colour[st] = css.getPropertyValue("--" + st).trim();
      });
      s.fillStyle = css.getPropertyValue("--none").trim();
      s.fillRect(0, 0, w, h);
      var step = w / T;
      for (var t = 1; t <= T; t++) {
        s.fillStyle = colour[ticks[t - 1][1]] || "#ccc";
        s.fillRect((t - 1) * step, 3, Math.max(step, 1), h - 6);
      }
    }
    overview.width = pw;
    overview.height = ph;
    var g = overview.getContext("2d");
    g.drawImage(strip, 0, 0);
    g.scale(dpr, dpr);
    var per = w / T;
    var css = getComputedStyle(document.documentElement);
    g.strokeStyle = css.getPropertyValue("--accent").trim();
    g.lineWidth = 1.5;
    g.strokeRect((win.start - 1) * per + 0.75, 0.75, Math.max(win.size * per, 2) - 1.5, h - 1.5);
    g.fillStyle = css.getPropertyValue("--ink").trim();
    g.fillRect((sel.tick - 1) * per + per / 2 - 1, 0, 2, h);
  }
  overview.addEventListener("click", function (ev) {
    var rect = overview.getBoundingClientRect();
    setTick(1 + Math.floor((ev.clientX - rect.left) / rect.width * T));
  });

  // ---- Stepping, selecting, the address fragment. ----
  function setTick(t) {
    if (T === 0) { return; }
    if (player !== null) { play(false); }
    t = Math.max(1, Math.min(T, t | 0));
    sel.tick = t;
    update();
  }
  function setNode(id) {
    sel.node = id;
    update();
    var row = rowById.has(id) ? rowEls[rowById.get(id).index] : null;
    if (row) { row.scrollIntoView({ block: "nearest" }); }
  }
  function writeHash() {
    var hash = "#tick=" + sel.tick + (sel.node !== null ? "&node=" + encodeURIComponent(sel.node) : "");
    if (location.hash !== hash) {
      try { history.replaceState(null, "", hash); } catch (e) { /* some hosts refuse; the page works on */ }
    }
  }
  function readHash() {
    var tick = sel.tick, node = sel.node;
    location.hash.replace(/^#/, "").split("&").forEach(function (part) {
      var eq = part.indexOf("=");
      if (eq < 0) { return; }
      var key = part.slice(0, eq), value;
      try { value = decodeURIComponent(part.slice(eq + 1)); } catch (e) { return; }
      if (key === "tick" && /^\d+$/.test(value)) { tick = +value; }
      // A derived id may be written without its EDN quotes: #node=0.1.
      if (key === "node") {
        if (rowById.has(value)) { node = value; }
        else if (rowById.has('"' + value + '"')) { node = '"' + value + '"'; }
      }
    });
    sel.node = node;
    setTick(tick);
  }

  // Playing steps on by itself, faster through long runs, and stops at
  // the last tick or at any step by hand.
  var player = null;
  function play(on) {
    if (player !== null) { clearInterval(player); player = null; }
    if (on && T > 0) {
      if (sel.tick >= T) { setTick(1); }
      player = setInterval(function () {
        if (sel.tick >= T) { play(false); } else { sel.tick++; update(); }
      }, Math.max(40, Math.min(600, 20000 / T)));
    }
    document.body.dataset.playing = String(player !== null);
  }
  $("play").addEventListener("click", function () { play(player === null); });
  // A click on a button does not keep the focus, so the keys keep working.
  document.querySelectorAll(".controls button").forEach(function (b) {
    b.addEventListener("mousedown", function (ev) { ev.preventDefault(); });
  });
  $("first").addEventListener("click", function () { setTick(1); });
  $("prev").addEventListener("click", function () { setTick(sel.tick - 1); });
  $("next").addEventListener("click", function () { setTick(sel.tick + 1); });
  $("last").addEventListener("click", function () { setTick(T); });
  $("ticknum").addEventListener("change", function () { setTick(+$("ticknum").value); });
  grid.addEventListener("click", function (ev) {
    var el = ev.target.closest("[data-tick], .node");
    if (!el) { return; }
    if (el.dataset.tick) { sel.tick = +el.dataset.tick; }
    if (el.dataset.nodeId !== undefined) { sel.node = el.dataset.nodeId; }
    update();
  });
  $("events").addEventListener("click", function (ev) {
    var el = ev.target.closest("[data-node-id]");
    if (el && rowById.has(el.dataset.nodeId)) { setNode(el.dataset.nodeId); }
  });
  document.addEventListener("keydown", function (ev) {
    if (T === 0 || (ev.target && ev.target.tagName === "INPUT")) { return; }
    // A focused button takes its own space and enter.
    if (ev.target && ev.target.tagName === "BUTTON" && (ev.key === " " || ev.key === "Enter")) { return; }
    var step = ev.shiftKey ? 10 : 1;
    var handled = true;
    if (ev.key === "ArrowRight") { setTick(sel.tick + step); }
    else if (ev.key === "ArrowLeft") { setTick(sel.tick - step); }
    else if (ev.key === "Home") { setTick(1); }
    else if (ev.key === "End") { setTick(T); }
    else if (ev.key === " ") { play(player === null); }
    else if (ev.key === "ArrowDown" || ev.key === "ArrowUp") {
      var r = selectedRow() ? selectedRow().index : -1;
      r = ev.key === "ArrowDown" ? Math.min(rows.length - 1, r + 1) : Math.max(0, r - 1);
      if (rows[r]) { setNode(idIn(rows[r], ticks[sel.tick - 1][0])); }
    } else { handled = false; }
    if (handled) { ev.preventDefault(); }
  });
  window.addEventListener("hashchange", readHash);
  window.addEventListener("resize", function () {
    if (T === 0) { return; }
    if (windowSize() !== win.size) { update(); } else { drawOverview(); }
  });

  $("title").textContent = data.title;
  if (T === 0) {
    grid.innerHTML = '<p class="empty" style="padding:12px">the run has no ticks</p>';
  } else {
    readHash();
  }
  document.body.dataset.playing = "false";
  document.body.dataset.readyMs = String(Math.round(performance.now()));
  document.body.dataset.ready = "true";
})();
