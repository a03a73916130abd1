// The confirmation dialog as a WAI-ARIA modal: focus moves into it (to the
// safe choice), Tab stays inside, Escape answers with the safe choice, the
// page behind is inert, and focus returns where it was when it closes.
(function () {
  var opener = null;
  var shown = null;
  function dialog() { return document.getElementById('confirm-dialog'); }
  function focusables(d) {
    return Array.prototype.filter.call(
      d.querySelectorAll('button:not([disabled]), summary, a[href], input, select, textarea, [tabindex]:not([tabindex="-1"])'),
      function (el) { return el.offsetParent !== null || el === document.activeElement; });
  }
  function behind(on) {
    var parts = document.querySelectorAll('header, .layout');
    for (var i = 0; i < parts.length; i++) { parts[i].inert = on; }
  }
  function follow() {
    var d = dialog();
    var key = d ? (d.getAttribute('data-confirmation') || '') + '/' + d.getAttribute('data-state') : null;
    if (d && shown === null) {
      opener = document.activeElement;
    }
    if (d && key !== shown) {
      behind(true);
      var first = d.querySelector('#deny, #dismiss');
      if (first) { first.focus(); }
    }
    if (!d && shown !== null) {
      behind(false);
      if (opener && document.contains(opener) && typeof opener.focus === 'function') { opener.focus(); }
      opener = null;
    }
    shown = key;
  }
  new MutationObserver(follow).observe(document.body, {
    childList: true, subtree: true, attributes: true, attributeFilter: ['data-state', 'data-confirmation']
  });
  document.addEventListener('keydown', function (event) {
    var d = dialog();
    if (!d) { return; }
    if (event.key === 'Escape') {
      event.preventDefault();
      var safe = d.querySelector('[data-escape]');
      if (safe) { safe.click(); }
      return;
    }
    if (event.key !== 'Tab') { return; }
    var items = focusables(d);
    if (items.length === 0) { event.preventDefault(); return; }
    var first = items[0];
    var last = items[items.length - 1];
    var active = document.activeElement;
    if (!d.contains(active)) { event.preventDefault(); first.focus(); return; }
    if (event.shiftKey && active === first) { event.preventDefault(); last.focus(); }
    else if (!event.shiftKey && active === last) { event.preventDefault(); first.focus(); }
  }, true);
})();
// Only the person's own input approves: a click, key or pointer event on the
// approve button that the browser did not generate from real input (a
// script's `.click()` or `dispatchEvent`, as an agent in the page could
// make) is stopped before the console sees it. Deny and dismiss stay
// scriptable: Escape answers with them.
(function () {
  function onApprove(target) {
    return target && typeof target.closest === 'function' && target.closest('#approve') !== null;
  }
  ['click', 'dblclick', 'mousedown', 'mouseup', 'pointerdown', 'pointerup', 'keydown', 'keyup', 'keypress', 'submit']
    .forEach(function (type) {
      window.addEventListener(type, function (event) {
        if (!event.isTrusted && onApprove(event.target)) {
          event.preventDefault();
          event.stopImmediatePropagation();
        }
      }, true);
    });
})();
