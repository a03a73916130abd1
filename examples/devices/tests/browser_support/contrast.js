// The lowest text contrast on the page (WCAG 2 ratio), over every visible
// element with its own text, outside inert (backdropped) parts. Returns
// {ratio, text, color, background}.
function parse(c) {
  var m = c.match(/rgba?\(([^)]+)\)/);
  if (!m) { return [255, 255, 255, 1]; }
  var p = m[1].split(',').map(function (x) { return parseFloat(x); });
  return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1];
}
function over(top, below) {
  var a = top[3];
  return [top[0] * a + below[0] * (1 - a), top[1] * a + below[1] * (1 - a), top[2] * a + below[2] * (1 - a), 1];
}
function background(el) {
  var layers = [];
  for (var e = el; e && e.nodeType === 1; e = e.parentElement) {
    var c = parse(getComputedStyle(e).backgroundColor);
    if (c[3] > 0) { layers.push(c); }
    if (c[3] >= 1) { break; }
  }
  var result = [255, 255, 255, 1];
  for (var i = layers.length - 1; i >= 0; i--) { result = over(layers[i], result); }
  return result;
}
function luminance(c) {
  var f = function (v) { v = v / 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
  return 0.2126 * f(c[0]) + 0.7152 * f(c[1]) + 0.0722 * f(c[2]);
}
var worst = {ratio: 21, text: null, color: null, background: null};
var all = document.querySelectorAll('body *');
for (var i = 0; i < all.length; i++) {
  var el = all[i];
  if (el.closest('[inert]') || el.closest('.visually-hidden')) { continue; }
  var own = Array.prototype.some.call(el.childNodes, function (n) { return n.nodeType === 3 && n.textContent.trim() !== ''; });
  if (!own || el.offsetParent === null && getComputedStyle(el).position !== 'fixed') { continue; }
  var style = getComputedStyle(el);
  if (style.visibility === 'hidden' || parseFloat(style.opacity) === 0) { continue; }
  var bg = background(el);
  var fg = over(parse(style.color), bg);
  var l1 = luminance(fg), l2 = luminance(bg);
  var ratio = (Math.max(l1, l2) + 0.05) / (Math.min(l1, l2) + 0.05);
  if (ratio < worst.ratio) {
    worst = {ratio: ratio, text: el.textContent.trim().slice(0, 60), color: style.color, background: 'rgb(' + bg.slice(0, 3).map(Math.round).join(',') + ')'};
  }
}
return worst;
