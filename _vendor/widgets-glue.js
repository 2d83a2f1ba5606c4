/* Glue between the vendored require.js, MathJax 3 and the ipywidgets HTML manager, so saved
 * widgets render offline:
 * 1. embed-amd.js looks for its fonts under <page dir>/@jupyter-widgets/html-manager/dist/,
 *    and the controls' icon font (FontAwesome 4) under <page dir>/@jupyter-widgets/: webpack
 *    takes each bundled module's public path from its AMD module URI. Map both module paths
 *    to the vendored copy beside this script, where the fonts are.
 * 2. The widget manager typesets labels with the MathJax 2 API (MathJax.Hub.Queue), which
 *    throws under MathJax 3; give it a small Hub that calls MathJax 3's typesetPromise.
 * 3. ipywidgets' Image view has no alt attribute: give each saved explorer figure one.
 * 4. A saved slider's handle (role="slider") has no accessible name: name it by the slider's
 *    visible description ("batch", "context"). */
(function () {
  var here = document.currentScript && document.currentScript.src;
  var base = here ? here.substring(0, here.lastIndexOf("/") + 1) : "_static/";
  if (window.require && window.require.config) {
    window.require.config({ paths: {
      "@jupyter-widgets/html-manager/dist": base + "widgets",
      "@jupyter-widgets": base + "widgets"
    } });
  }
  function shim() {
    var mj = window.MathJax;
    if (mj && !mj.Hub) {
      mj.Hub = {
        Queue: function () {
          var m = window.MathJax;
          if (m && typeof m.typesetPromise === "function") { m.typesetPromise(); }
        },
        Config: function () {}
      };
    }
  }
  shim();
  document.addEventListener("DOMContentLoaded", shim);
  window.addEventListener("load", shim);
  var tries = 0;
  var timer = setInterval(function () {
    shim();
    tries += 1;
    if ((window.MathJax && window.MathJax.typesetPromise) || tries > 100) { clearInterval(timer); }
  }, 50);
  var ALT = "Explorer figure in its saved state (run the notebook for the live explorer; the slider below the explorer steps through precomputed frames).";
  function label(root) {
    var imgs = (root || document).querySelectorAll(".jupyter-widgets img:not([alt])");
    for (var i = 0; i < imgs.length; i++) { imgs[i].setAttribute("alt", ALT); }
    var handles = (root || document).querySelectorAll(".widget-slider [role=slider]:not([aria-label])");
    for (var j = 0; j < handles.length; j++) {
      var box = handles[j].closest(".widget-slider");
      var text = box && box.querySelector(".widget-label");
      var name = text && text.textContent.trim();
      handles[j].setAttribute("aria-label", name || "slider");
    }
  }
  if (window.MutationObserver) {
    new MutationObserver(function () { label(document); })
      .observe(document.documentElement, { childList: true, subtree: true });
  }
})();
