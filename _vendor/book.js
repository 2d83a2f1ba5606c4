/* The Roofline Book: what CSS alone cannot do on a static page (styles in book.css).
 * - A formula wider than its box: on a phone or tablet (< 960 px) its font shrinks to fit, to no
 *   less than 0.8 of its size. An inline one wider than the column gets a line of its own
 *   (mjx-container.llm-wide), unless it sits in a box that already scrolls (a wide table).
 * - A box that still scrolls sideways (formula, code, table) is wrapped in .llm-scroll-host and
 *   marked .llm-scrolls: a fade and a "scroll" marker at its right edge, gone at the end.
 * - Table cells holding one word or a number with its unit do not wrap (td.llm-nowrap).
 * - A long inline code name (over 20 characters) may break after its dots and underscores, in
 *   the text and in the page's contents (the API page's constants ran out of the sidebar).
 * Run when MathJax has typeset, when the width changes and when a dropdown or solution opens.
 */
(function () {
  var NARROW = "(max-width: 959.98px)";
  var MIN_SCALE = 0.8;
  // "39.2 ms", "1,424", "$0.0617", "3.35 TB/s", "300×", "+33% FLOPs", "3.80e+25 FLOP"
  var NUMBER = /^[~≈<>≤≥±$+\-−]*\s?\d[\d,.]*(e[+\-−]?\d+)?\s?[×%]?(\s?[A-Za-zµμ$\/·²³\-]{1,12})?$/;
  var SCROLLERS = 'mjx-container[display="true"], mjx-container.llm-wide, pre, ' +
    ".pst-scrollable-table-container, .table-wrapper, div.cell_output .output";

  function inScrollBox(e, stop) {
    for (; e && e !== stop; e = e.parentElement) {
      var o = getComputedStyle(e).overflowX;
      if (o === "auto" || o === "scroll") { return true; }
    }
    return false;
  }

  function markWideInline(art) {
    art.querySelectorAll('mjx-container:not([display="true"])').forEach(function (m) {
      m.classList.remove("llm-wide");
      if (m.dataset.llmSize !== undefined) { m.style.fontSize = m.dataset.llmSize; }  /* unfitted */
      var host = m.parentElement;
      var start = host && host.classList.contains("llm-scroll-host") ? host.parentElement : host;
      if (inScrollBox(start, art)) { return; }  /* a wide table already scrolls it */
      var col = art.getBoundingClientRect();
      var right = Math.min(col.right, document.documentElement.clientWidth);
      var r = m.getBoundingClientRect();
      if (r.right > right + 1 || r.left < Math.max(0, col.left) - 1) { m.classList.add("llm-wide"); }
    });
  }

  function naturalWidth(m) {
    var body = m.querySelector("mjx-math");
    return Math.max(m.scrollWidth, body ? body.getBoundingClientRect().width : 0);
  }

  function fitMath(art) {
    var narrow = window.matchMedia(NARROW).matches;
    art.querySelectorAll('mjx-container[display="true"], mjx-container.llm-wide').forEach(function (m) {
      if (m.dataset.llmSize === undefined) { m.dataset.llmSize = m.style.fontSize || ""; }
      m.style.fontSize = m.dataset.llmSize;  /* MathJax's own size first */
      if (!narrow || !m.clientWidth) { return; }
      var base = parseFloat(getComputedStyle(m).fontSize), scale = 1;
      for (var i = 0; i < 3; i++) {  /* widths scale with the font; a second pass absorbs rounding */
        var natural = naturalWidth(m), box = m.clientWidth;
        if (natural <= box + 0.5 || scale <= MIN_SCALE) { break; }
        scale = Math.max(MIN_SCALE, scale * box / natural);
        m.style.fontSize = (base * scale).toFixed(2) + "px";
      }
    });
  }

  function background(e) {
    for (; e; e = e.parentElement) {
      var c = getComputedStyle(e).backgroundColor;
      if (c && c !== "transparent" && !/rgba\(.*,\s*0\)$/.test(c)) { return c; }
    }
    return "";
  }

  function showEnd(s, host) {
    host.classList.toggle("llm-at-end", s.scrollLeft + s.clientWidth >= s.scrollWidth - 2);
  }

  function cue(art) {
    art.querySelectorAll(SCROLLERS).forEach(function (s) {
      var parent = s.parentElement;
      var host = parent && parent.classList.contains("llm-scroll-host") ? parent : null;
      var over = s.clientWidth > 0 && s.scrollWidth > s.clientWidth + 1;
      if (over) { var o = getComputedStyle(s).overflowX; over = o === "auto" || o === "scroll"; }
      if (!over) { if (host) { host.classList.remove("llm-scrolls"); } return; }
      if (!host) {
        host = document.createElement("span");
        host.className = "llm-scroll-host";
        parent.insertBefore(host, s);
        host.appendChild(s);
      }
      var bg = background(s);
      if (bg) { host.style.setProperty("--llm-fade", bg); }
      host.classList.add("llm-scrolls");
      showEnd(s, host);
      if (!s.dataset.llmCue) {
        s.dataset.llmCue = "1";
        s.addEventListener("scroll", function () { showEnd(s, host); }, { passive: true });
      }
    });
  }

  function nowrapCells(art) {
    art.querySelectorAll("td, th").forEach(function (c) {
      var t = c.textContent.trim();
      if (t && t.length <= 40 && (!/\s/.test(t) || NUMBER.test(t))) { c.classList.add("llm-nowrap"); }
    });
  }

  function breakLongNames(art) {
    art.querySelectorAll("code.literal span.pre, code.literal:not(:has(span.pre))").forEach(function (e) {
      if (e.dataset.llmWbr || e.children.length || e.closest("td, th, pre")) { return; }
      var t = e.textContent;
      if (t.length <= 20 || !/[._]/.test(t)) { return; }
      e.dataset.llmWbr = "1";
      e.textContent = "";
      t.split(/(?<=[._])(?=\w)/).forEach(function (part, i) {
        if (i) { e.appendChild(document.createElement("wbr")); }
        e.appendChild(document.createTextNode(part));
      });
    });
  }

  var busy = false;
  function run() {
    if (busy) { return; }
    busy = true;
    requestAnimationFrame(function () {
      busy = false;
      var art = document.querySelector(".bd-article") || document.body;
      nowrapCells(art);
      breakLongNames(art);
      var toc = document.querySelector(".bd-sidebar-secondary");  /* the API page's long names */
      if (toc) { breakLongNames(toc); }
      markWideInline(art);
      fitMath(art);
      cue(art);
    });
  }
  function whenTypeset(tries) {
    var M = window.MathJax;
    if (M && M.startup && M.startup.promise) { M.startup.promise.then(run); return; }
    if (tries < 200) { setTimeout(function () { whenTypeset(tries + 1); }, 50); }
  }
  window.llmLayout = run;
  window.addEventListener("load", function () {
    run();
    whenTypeset(0);
    if (document.fonts) { document.fonts.ready.then(run); }
  });
  window.addEventListener("resize", run);
  document.addEventListener("toggle", run, true);  /* a <details> opened: its boxes have a width */
  document.addEventListener("click", function (e) {  /* so did a folded solution (togglebutton) */
    if (e.target.closest && e.target.closest(".toggle-button, .dropdown .admonition-title")) {
      setTimeout(run, 50);
    }
  }, true);
})();
