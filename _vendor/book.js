/* Inline formulas wider than the text column (long ones on a phone) become their own scroll box,
 * with the same edge shadows as display math, instead of running off the screen. Only those get
 * the class: short inline formulas keep their baseline, and so do formulas inside a box that
 * already scrolls (a wide table). Re-checked when the width changes. */
(function () {
  function mark() {
    document.querySelectorAll('.bd-article mjx-container:not([display="true"])').forEach(function (m) {
      m.classList.remove("llm-wide");
      var art = m.closest(".bd-article") || document.body;
      if (inScrollBox(m.parentElement, art)) { return; }  /* a wide table already scrolls it */
      var col = art.getBoundingClientRect();
      var right = Math.min(col.right, document.documentElement.clientWidth);
      var r = m.getBoundingClientRect();
      if (r.right > right + 1 || r.left < Math.max(0, col.left) - 1) { m.classList.add("llm-wide"); }
    });
  }
  function inScrollBox(e, stop) {
    for (; e && e !== stop; e = e.parentElement) {
      var o = getComputedStyle(e).overflowX;
      if (o === "auto" || o === "scroll") { return true; }
    }
    return false;
  }
  function whenTypeset(tries) {
    var M = window.MathJax;
    if (M && M.startup && M.startup.promise) { M.startup.promise.then(mark); return; }
    if (tries < 200) { setTimeout(function () { whenTypeset(tries + 1); }, 50); }
  }
  window.llmMarkWideMath = mark;
  window.addEventListener("load", function () { whenTypeset(0); });
  window.addEventListener("resize", mark);
})();
