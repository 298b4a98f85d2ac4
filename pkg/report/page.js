// ds report: the page's script (written for ds, no library). It reads
// the page only; it loads nothing. The log is data (the ds-data element:
// a JSON array, its first element the meta, then one array a row:
// [KIND, STREAM, POSITION, TIME, TEXT]); only the rows in view are
// elements (virtual scrolling, rows of a fixed height), and they are
// made of text nodes: nothing of a payload is ever parsed as markup.
(function () {
  "use strict";
  var ROW = 16; // px, as .l's height in the style
  var MAXH = 8e6; // px: a taller log is scrolled in proportion
  var data = JSON.parse(document.getElementById("ds-data").textContent);
  var meta = data[0], N = data.length - 1; // row i is data[i + 1]
  var kinds = meta.kinds, streams = meta.streams;
  var view = document.getElementById("view"), box = document.getElementById("rows");
  var header = document.querySelector("header");
  var detail = document.getElementById("detail");
  var q = document.getElementById("q");
  var only = document.getElementById("only");
  var count = document.getElementById("count");
  var tip = document.getElementById("tip");
  var list = null; // the rows shown, by index (only matches); null: all
  var marked = null; // Uint8Array: 1 for the rows that match
  var matches = [], at = -1, cur = -1;

  // What the kinds say, once.
  var flags = kinds.map(function (k) {
    var c = " " + k[0] + " ";
    return {er: c.indexOf(" er ") >= 0, ex: c.indexOf(" ex ") >= 0, ls: c.indexOf(" ls ") >= 0,
      dm: c.indexOf(" dm ") >= 0, el: c.indexOf(" el ") >= 0};
  });
  function row(i) { return data[i + 1]; }
  var joined = {};
  function text(i) {
    var x = row(i)[4];
    if (typeof x === "string") return x;
    if (joined[i] === undefined) joined[i] = x.map(function (g) { return typeof g === "string" ? g : g[1]; }).join("");
    return joined[i];
  }
  // A row's address: NODE#LIFE/POSITION, or elided-N; "" for none.
  function rowID(i) {
    var r = row(i);
    if (flags[r[0]].el) return "elided-" + r[2];
    return r[1] < 0 ? "" : streams[r[1]] + "/" + r[2];
  }
  // find returns the row at address id: the first of its position, or
  // else the first of its stream past it (a position left off); -1.
  function find(id) {
    var i, r;
    if (/^elided-\d+$/.test(id)) {
      var n = +id.slice(7);
      for (i = 0; i < N; i++) { r = row(i); if (flags[r[0]].el && r[2] === n) return i; }
      return -1;
    }
    var slash = id.lastIndexOf("/"), s = streams.indexOf(id.slice(0, slash)), p = +id.slice(slash + 1);
    if (slash < 0 || s < 0 || !(p >= 0)) return -1;
    var next = -1, np = Infinity;
    for (i = 0; i < N; i++) {
      r = row(i);
      if (r[1] !== s || flags[r[0]].el) continue;
      if (r[2] === p) return i;
      if (r[2] > p && r[2] < np) { next = i; np = r[2]; }
    }
    return next;
  }
  function since(ms) {
    if (ms === null) return "-";
    var a = Math.abs(ms), f = String(a % 1000);
    return (ms < 0 ? "-" : "+") + Math.floor(a / 1000) + "." + "000".slice(f.length) + f;
  }
  function fill(el, x) {
    if (typeof x === "string") { el.textContent = x; return; }
    for (var j = 0; j < x.length; j++) {
      var g = x[j];
      if (typeof g === "string") { el.appendChild(document.createTextNode(g)); continue; }
      var s = document.createElement("span");
      s.className = g[0];
      s.textContent = g[1];
      if (g[2]) s.style.color = g[2];
      if (g[3]) s.style.background = g[3];
      el.appendChild(s);
    }
  }
  function rowElement(i) {
    var r = row(i), k = kinds[r[0]], f = flags[r[0]], el = document.createElement("div");
    el.className = k[0] + (i & 1 ? " od" : "") + (marked && marked[i] ? " m" : "") + (i === cur ? " cur" : "");
    el.dataset.i = i;
    // Its address is data-id, not an id: the browser would scroll to an
    // element of the address itself, and rows move as the log scrolls.
    var id = rowID(i);
    if (id) el.dataset.id = id;
    var a = document.createElement("a"), u = document.createElement("u"), w = document.createElement("i"), s = document.createElement("span");
    a.textContent = f.el ? "…" : r[2] < 0 ? "!" : r[2];
    u.textContent = f.el ? "" : since(r[3]);
    w.textContent = k[1];
    fill(s, r[4]);
    el.append(a, u, w, s);
    return el;
  }

  // Virtual scrolling: #rows is as tall as the rows (at most MAXH, then
  // scrolled in proportion); the rows in view are drawn on each scroll.
  function shown() { return list ? list.length : N; }
  function top() { // the row (fractional, of those shown) at the top of the view
    var n = shown(), vh = view.clientHeight;
    if (n * ROW <= MAXH) return view.scrollTop / ROW;
    var range = box.offsetHeight - vh;
    return range > 0 ? view.scrollTop / range * Math.max(n - vh / ROW, 0) : 0;
  }
  var drawn = 0;
  function render() {
    drawn = 0;
    var n = shown(), f = top(), vh = view.clientHeight;
    var a = Math.max(0, Math.floor(f)), b = Math.min(n, Math.ceil(f + vh / ROW) + 1);
    var frag = document.createDocumentFragment(), curEl = null;
    for (var v = a; v < b; v++) {
      var i = list ? list[v] : v, el = rowElement(i);
      el.style.top = (view.scrollTop + (v - f) * ROW) + "px";
      frag.appendChild(el);
      if (i === cur) curEl = el;
    }
    box.replaceChildren(frag);
    // A line too long for its row is shown whole below, when current.
    var s = curEl && curEl.lastChild;
    if (s && s.scrollWidth > s.clientWidth + 1) {
      detail.replaceChildren();
      fill(detail, row(cur)[4]);
      detail.hidden = false;
    } else {
      detail.hidden = true;
    }
  }
  function redraw() { if (!drawn) drawn = requestAnimationFrame(render); }
  function layout() {
    view.style.height = Math.max(window.innerHeight - header.offsetHeight - 4, 10 * ROW) + "px";
    box.style.height = Math.min(shown() * ROW, MAXH) + "px";
    render();
  }
  view.addEventListener("scroll", redraw, {passive: true});
  window.addEventListener("resize", layout);

  // Jumps: the row scrolled to is centred and outlined, and its address
  // is the page's.
  function show(i, setHash) {
    if (i === null || i < 0 || i >= N) return;
    cur = i;
    var v = list ? list.indexOf(i) : i;
    if (v < 0) { only.checked = false; list = null; v = i; layout(); }
    var n = shown(), vh = view.clientHeight, vis = vh / ROW;
    var f = Math.max(0, v - (vis - 1) / 2);
    view.scrollTop = n * ROW <= MAXH ? f * ROW : f / Math.max(n - vis, 1) * (box.offsetHeight - vh);
    var r = view.getBoundingClientRect();
    if (r.top < header.offsetHeight - 1 || r.bottom > window.innerHeight + 1) window.scrollBy(0, r.top - header.offsetHeight);
    render();
    var id = rowID(i);
    if (setHash && id) history.replaceState(null, "", "#" + encodeURIComponent(id).replace(/%2F/g, "/"));
  }
  function go(id, setHash) { if (id) show(find(id), setHash); }
  function fromHash() { go(decodeURIComponent(location.hash.slice(1)), false); }
  window.addEventListener("hashchange", fromHash);
  box.addEventListener("click", function (ev) {
    var el = ev.target.closest(".l");
    if (el) show(+el.dataset.i, ev.target.closest("a") !== null);
  });
  document.addEventListener("click", function (ev) {
    // The summary's links to rows (the rows are not elements to go to).
    var a = ev.target.closest && ev.target.closest("a[href^='#']");
    if (a && !box.contains(a)) { ev.preventDefault(); go(decodeURIComponent(a.hash.slice(1)), true); }
  });
  detail.addEventListener("click", function () { detail.hidden = true; });

  // Search: a regular expression, case-insensitive unless it holds an
  // upper-case letter (as ds log -g); not a valid one, it is taken as
  // text. It reads the data, not the page.
  function compile(s) {
    var fl = /[A-Z]/.test(s) ? "" : "i";
    try { return new RegExp(s, fl); } catch (e) {
      return new RegExp(s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"), fl);
    }
  }
  function search() {
    var s = q.value, re = s ? compile(s) : null;
    matches = []; at = -1; marked = null;
    if (re !== null) {
      marked = new Uint8Array(N);
      for (var i = 0; i < N; i++) if (re.test(text(i))) { matches.push(i); marked[i] = 1; }
    }
    list = only.checked && re !== null ? matches : null;
    count.textContent = re === null ? "" : matches.length === 1 ? "1 match" : matches.length + " matches";
    count.dataset.n = re === null ? "" : String(matches.length);
    count.dataset.q = s; // what the count is of
    layout();
    if (cur >= 0 && (list === null || marked[cur])) show(cur, false);
  }
  function step(d) {
    if (!matches.length) return;
    at = (at + d + matches.length) % matches.length;
    show(matches[at], true);
    count.textContent = (at + 1) + " of " + matches.length;
  }
  var pending = 0;
  q.addEventListener("input", function () { clearTimeout(pending); pending = setTimeout(search, 150); });
  q.addEventListener("keydown", function (ev) {
    if (ev.key === "Enter") { clearTimeout(pending); if (count.dataset.q !== q.value) search(); step(ev.shiftKey ? -1 : 1); }
  });
  only.addEventListener("change", search);
  document.getElementById("next").addEventListener("click", function () { step(1); });
  document.getElementById("prev").addEventListener("click", function () { step(-1); });

  // Errors, exits, losses.
  function first(pred) {
    for (var i = 0; i < N; i++) if (pred(flags[row(i)[0]])) return i;
    return -1;
  }
  function cycle(pred) {
    for (var j = 1; j <= N; j++) {
      var i = (cur + j + N) % N;
      if (pred(flags[row(i)[0]])) return show(i, true);
    }
  }
  function isError(f) { return f.er; }
  document.getElementById("first-error").addEventListener("click", function () { show(first(isError), true); });
  document.getElementById("next-error").addEventListener("click", function () { cycle(isError); });
  document.getElementById("exit").addEventListener("click", function () {
    var i = first(function (f) { return f.ex && f.er; });
    show(i >= 0 ? i : first(function (f) { return f.ex; }), true);
  });
  document.getElementById("first-loss").addEventListener("click", function () {
    show(first(function (f) { return f.ls || f.dm; }), true);
  });

  // Charts: hovering shows the values and the log line at that time;
  // a click goes to that line.
  var timed = null;
  function rowAt(t) {
    if (timed === null) {
      timed = [];
      for (var i = 0; i < N; i++) if (row(i)[3] !== null) timed.push(i);
    }
    var lo = 0, hi = timed.length - 1, best = -1;
    while (lo <= hi) {
      var mid = (lo + hi) >> 1;
      if (row(timed[mid])[3] <= t) { best = timed[mid]; lo = mid + 1; } else hi = mid - 1;
    }
    return best >= 0 ? best : timed.length ? timed[0] : -1;
  }
  function valueAt(pl, x, ymax) {
    var pts = pl.getAttribute("points").split(" "), best = null, bd = Infinity;
    for (var i = 0; i < pts.length; i++) {
      var p = pts[i].split(","), d = Math.abs(+p[0] - x);
      if (d < bd) { bd = d; best = p; }
    }
    return best ? (100 - best[1]) / 100 * ymax : null;
  }
  function fmt(v, unit) {
    if (unit !== "B/s") return v.toFixed(1) + " %";
    var u = ["B/s", "KiB/s", "MiB/s", "GiB/s"], i = 0;
    while (v >= 1024 && i < u.length - 1) { v /= 1024; i++; }
    return v.toFixed(1) + " " + u[i];
  }
  Array.prototype.forEach.call(document.querySelectorAll(".chart svg"), function (svg) {
    var t0 = +svg.dataset.t0, t1 = +svg.dataset.t1, ymax = +svg.dataset.ymax;
    var line = document.createElementNS("http://www.w3.org/2000/svg", "line");
    line.setAttribute("class", "cur"); line.setAttribute("y1", "0"); line.setAttribute("y2", "100");
    function at(ev) {
      var b = svg.getBoundingClientRect(), f = (ev.clientX - b.left) / b.width;
      return {x: f * 1000, t: t0 + f * (t1 - t0)};
    }
    svg.addEventListener("mousemove", function (ev) {
      var p = at(ev), i = rowAt(p.t), lines = ["+" + (p.t / 1000).toFixed(3) + " s"];
      line.setAttribute("x1", p.x); line.setAttribute("x2", p.x);
      if (!line.parentNode) svg.appendChild(line);
      Array.prototype.forEach.call(svg.querySelectorAll("polyline"), function (pl) {
        var v = valueAt(pl, p.x, ymax);
        if (v !== null) lines.push(pl.dataset.name + ": " + fmt(v, svg.dataset.unit));
      });
      if (i >= 0) lines.push(row(i)[2] + "  " + text(i).slice(0, 300));
      tip.textContent = lines.join("\n");
      tip.hidden = false;
      tip.style.left = Math.min(ev.clientX + 12, window.innerWidth - 420) + "px";
      tip.style.top = (ev.clientY + 14) + "px";
      tip.dataset.row = i >= 0 ? rowID(i) : "";
    });
    svg.addEventListener("mouseleave", function () { tip.hidden = true; if (line.parentNode) svg.removeChild(line); });
    svg.addEventListener("click", function (ev) { show(rowAt(at(ev).t), true); });
  });

  if ("scrollRestoration" in history) history.scrollRestoration = "manual";
  box.dataset.rows = String(N);
  layout();
  fromHash();
  document.documentElement.dataset.ready = "1";
})();
