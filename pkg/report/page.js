// ds report: the page's script (written for ds, no library). It reads
// the page only; it loads nothing.
(function () {
  "use strict";
  var rows = document.getElementById("rows");
  var all = rows.children;
  var q = document.getElementById("q");
  var only = document.getElementById("only");
  var count = document.getElementById("count");
  var tip = document.getElementById("tip");
  var meta = JSON.parse(document.getElementById("ds-meta").textContent);
  var matches = [], at = -1, current = null;

  // Jumps: a row scrolled to is outlined, and its link is the address.
  function show(el, setHash) {
    if (!el) return;
    if (current) current.classList.remove("cur");
    current = el;
    el.classList.add("cur");
    el.scrollIntoView({block: "center"});
    if (setHash && el.id) history.replaceState(null, "", "#" + encodeURIComponent(el.id).replace(/%2F/g, "/"));
  }
  function fromHash() {
    var id = decodeURIComponent(location.hash.slice(1));
    if (id) show(document.getElementById(id), false);
  }
  window.addEventListener("hashchange", fromHash);
  rows.addEventListener("click", function (ev) {
    var a = ev.target.closest("a");
    if (a && a.parentNode.parentNode === rows) show(a.parentNode, true);
  });

  // Search: a regular expression, case-insensitive unless it holds an
  // upper-case letter (as ds log -g); not a valid one, it is taken as text.
  function compile(s) {
    var flags = /[A-Z]/.test(s) ? "" : "i";
    try { return new RegExp(s, flags); } catch (e) {
      return new RegExp(s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"), flags);
    }
  }
  function search() {
    var s = q.value;
    // Only the rows whose state changes are touched: a page of 100 000
    // rows restyles what it must, not every row.
    matches.forEach(function (r) { r.classList.remove("m"); });
    matches = []; at = -1;
    var re = s ? compile(s) : null;
    if (re !== null) {
      for (var i = 0; i < all.length; i++) {
        if (re.test(all[i].lastChild.textContent)) matches.push(all[i]);
      }
      matches.forEach(function (r) { r.classList.add("m"); });
    }
    rows.classList.toggle("only", only.checked && re !== null);
    count.textContent = re === null ? "" : matches.length === 1 ? "1 match" : matches.length + " matches";
    count.dataset.n = re === null ? "" : String(matches.length);
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
    if (ev.key === "Enter") { clearTimeout(pending); if (!count.dataset.n) search(); step(ev.shiftKey ? -1 : 1); }
  });
  only.addEventListener("change", search);
  document.getElementById("next").addEventListener("click", function () { step(1); });
  document.getElementById("prev").addEventListener("click", function () { step(-1); });

  // Errors, exits, losses.
  function cycle(sel) {
    var list = rows.querySelectorAll(sel), i = 0;
    if (current) for (; i < list.length; i++) if (current.compareDocumentPosition(list[i]) & Node.DOCUMENT_POSITION_FOLLOWING) break;
    show(list[i % Math.max(list.length, 1)], true);
  }
  document.getElementById("first-error").addEventListener("click", function () {
    show(meta.firstError ? document.getElementById(meta.firstError) : rows.querySelector(".er"), true);
  });
  document.getElementById("next-error").addEventListener("click", function () { cycle(".er"); });
  document.getElementById("exit").addEventListener("click", function () {
    show(rows.querySelector(".ex.er") || rows.querySelector(".ex"), true);
  });
  document.getElementById("first-loss").addEventListener("click", function () { show(rows.querySelector(".ls,.dm"), true); });

  // Charts: hovering shows the values and the log line at that time;
  // a click goes to that line.
  var timed = null;
  function rowAt(t) {
    if (timed === null) timed = Array.prototype.filter.call(all, function (r) { return r.dataset.t !== undefined; });
    var lo = 0, hi = timed.length - 1, best = null;
    while (lo <= hi) {
      var mid = (lo + hi) >> 1;
      if (+timed[mid].dataset.t <= t) { best = timed[mid]; lo = mid + 1; } else hi = mid - 1;
    }
    return best || timed[0] || null;
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
    var cur = document.createElementNS("http://www.w3.org/2000/svg", "line");
    cur.setAttribute("class", "cur"); cur.setAttribute("y1", "0"); cur.setAttribute("y2", "100");
    function at(ev) {
      var box = svg.getBoundingClientRect(), f = (ev.clientX - box.left) / box.width;
      return {x: f * 1000, t: t0 + f * (t1 - t0)};
    }
    svg.addEventListener("mousemove", function (ev) {
      var p = at(ev), r = rowAt(p.t), lines = ["+" + (p.t / 1000).toFixed(3) + " s"];
      cur.setAttribute("x1", p.x); cur.setAttribute("x2", p.x);
      if (!cur.parentNode) svg.appendChild(cur);
      Array.prototype.forEach.call(svg.querySelectorAll("polyline"), function (pl) {
        var v = valueAt(pl, p.x, ymax);
        if (v !== null) lines.push(pl.dataset.name + ": " + fmt(v, svg.dataset.unit));
      });
      if (r) lines.push(r.children[0].textContent + "  " + r.children[3].textContent.slice(0, 300));
      tip.textContent = lines.join("\n");
      tip.hidden = false;
      tip.style.left = Math.min(ev.clientX + 12, window.innerWidth - 420) + "px";
      tip.style.top = (ev.clientY + 14) + "px";
      tip.dataset.row = r && r.id ? r.id : "";
    });
    svg.addEventListener("mouseleave", function () { tip.hidden = true; if (cur.parentNode) svg.removeChild(cur); });
    svg.addEventListener("click", function (ev) { show(rowAt(at(ev).t), true); });
  });

  fromHash();
})();
