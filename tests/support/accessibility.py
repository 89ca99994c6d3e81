"""Accessibility checks over a page in Chromium: the accessibility tree and text contrast.

`unnamed_controls` reads Chromium's own accessibility tree (what a screen reader is
given) and returns each button, textbox, combobox, link or checkbox with no name.
`low_contrast` computes WCAG contrast from the computed styles of every visible text
(its colour against the first opaque background behind it) and returns those below
4.5:1.
"""

from __future__ import annotations

from typing import Any

CONTROL_ROLES = {
    "button",
    "textbox",
    "combobox",
    "link",
    "checkbox",
    "slider",
    "searchbox",
    "DisclosureTriangle",
}
AA_RATIO = 4.5


def unnamed_controls(page: Any) -> list[str]:
    """Return ``role (html tag, id, class)`` for each control the tree gives no name."""
    session = page.context.new_cdp_session(page)
    try:
        nodes = session.send("Accessibility.getFullAXTree")["nodes"]
        unnamed = []
        for node in nodes:
            role = str(node.get("role", {}).get("value", ""))
            name = str(node.get("name", {}).get("value", "")).strip()
            if node.get("ignored") or role not in CONTROL_ROLES or name:
                continue
            unnamed.append(f"{role} {_describe(session, node)}")
        return unnamed
    finally:
        session.detach()


def _describe(session: Any, node: dict[str, Any]) -> str:
    backend = node.get("backendDOMNodeId")
    if backend is None:
        return "(no DOM node)"
    described = session.send("DOM.describeNode", {"backendNodeId": backend})["node"]
    attributes = described.get("attributes", [])
    pairs = dict(zip(attributes[::2], attributes[1::2], strict=False))
    tag, ident, kind = described.get("localName"), pairs.get("id", ""), pairs.get("class", "")
    return f"({tag}, id={ident}, class={kind})"


CONTRAST_JS = """
(minimum) => {
  function rgba(text) {
    const m = text.match(/rgba?\\(([^)]+)\\)/);
    if (!m) return null;
    const parts = m[1].split(/[ ,/]+/).filter(Boolean).map(Number);
    return [parts[0], parts[1], parts[2], parts.length > 3 ? parts[3] : 1];
  }
  function luminance([r, g, b]) {
    const c = [r, g, b].map((v) => { v /= 255;
      return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); });
    return 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2];
  }
  function blend(top, bottom) {
    const a = top[3];
    return [0, 1, 2].map((i) => top[i] * a + bottom[i] * (1 - a)).concat([1]);
  }
  function background(el) {
    const layers = [];
    for (let node = el; node; node = node.parentElement) {
      const c = rgba(getComputedStyle(node).backgroundColor);
      if (c && c[3] > 0) { layers.push(c); if (c[3] >= 1) break; }
    }
    let color = [255, 255, 255, 1];
    for (const layer of layers.reverse()) color = blend(layer, color);
    return color;
  }
  function visible(el) {
    const s = getComputedStyle(el);
    if (s.visibility === "hidden" || s.display === "none" || Number(s.opacity) === 0) return false;
    const r = el.getBoundingClientRect();
    if (r.width < 1 || r.height < 1) return false;
    if (el.closest("[aria-hidden=true]")) return false;
    const clip = s.clip || "";
    return !(clip.startsWith("rect(0") || (r.width <= 1 && r.height <= 1));
  }
  const failures = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  const seen = new Set();
  for (let t = walker.nextNode(); t; t = walker.nextNode()) {
    const el = t.parentElement;
    if (!el || seen.has(el) || !t.textContent.trim()) continue;
    seen.add(el);
    if (["SCRIPT", "STYLE", "NOSCRIPT", "TITLE"].includes(el.tagName) || !visible(el)) continue;
    const style = getComputedStyle(el);
    let fg = rgba(style.color);
    if (!fg) continue;
    const bg = background(el);
    let opacity = 1;
    for (let n = el; n; n = n.parentElement) opacity *= Number(getComputedStyle(n).opacity);
    if (opacity < 0.05) continue;  // faded out: not shown
    fg = blend([fg[0], fg[1], fg[2], fg[3] * opacity], bg);
    const [a, b] = [luminance(fg), luminance(bg)].sort((x, y) => y - x);
    const ratio = (a + 0.05) / (b + 0.05);
    if (ratio < minimum) {
      const under = bg.slice(0, 3).map(Math.round);
      failures.push(`${ratio.toFixed(2)}:1 ${style.color} on rgb(${under}) `
        + `<${el.tagName.toLowerCase()} class="${String(el.className).slice(0, 40)}"> `
        + JSON.stringify(t.textContent.trim().slice(0, 40)));
    }
  }
  return failures;
}
"""


def low_contrast(page: Any, minimum: float = AA_RATIO) -> list[str]:
    """Return each visible text whose contrast with its background is below ``minimum``."""
    return list(page.evaluate(CONTRAST_JS, minimum))
