"""The page script and styles of the tools around an answer (issue 30, items 8, 9 and 11).

The thumbs-down form opens beside the answer it rates (over the chat, never under the
filters); the flag menu of fault reasons opens where all of it shows; an export button
downloads its file in one click; a filter box completes what was typed to a known
document or tag on Enter instead of making a free-text value that matches nothing; and
the follow-up questions under an answer ask themselves when clicked. `layout.JS` runs
`TOOLS_JS` inside its own function; `layout.CSS` ends with `TOOLS_CSS`.
"""

from __future__ import annotations

__all__ = ["TOOLS_CSS", "TOOLS_JS"]

# The page's ink, surface and subdued colours (`layout.CSS`), light or dark with the theme.
_INK = "var(--pa-ink)"
_SURFACE = "var(--pa-surface)"
_EDGE = "var(--pa-subdued)"

TOOLS_CSS = f"""
#feedback-pop {{ position: fixed !important; z-index: 45; box-sizing: border-box;
  background: {_SURFACE}; color: {_INK}; border: 1px solid {_EDGE}; border-radius: 8px;
  box-shadow: 0 6px 24px rgba(0, 0, 0, 0.18); padding: 0.5rem; gap: 0.4rem;
  max-height: 80vh; overflow-y: auto; }}
#feedback-pop #feedback-close {{ align-self: flex-end; width: auto; }}
.extra-feedback .extra-feedback-options {{ z-index: 60; background: {_SURFACE};
  border: 1px solid {_EDGE}; border-radius: 6px; padding: 0.25rem; }}
.extra-feedback:focus-within .extra-feedback-options {{ display: flex; }}
.export-file {{ position: absolute !important; visibility: hidden; height: 0 !important;
  overflow: hidden; padding: 0 !important; border: 0 !important; }}
#follow-ups {{ display: flex; flex-wrap: wrap; gap: 0.4rem; margin: 0.25rem 0; }}
#follow-ups button {{ font-size: 0.9rem; text-align: left; padding: 0.3rem 0.7rem;
  border: 1px solid {_EDGE}; border-radius: 999px; background: {_SURFACE}; color: {_INK};
  cursor: pointer; }}
"""

TOOLS_JS = """
  // The thumbs-down form opens beside the answer it rates.
  let rated = null;
  const RATINGS = new Set(["Like", "Dislike", "Liked", "Disliked"]);
  document.addEventListener("click", (event) => {
    const target = event.target.closest ? event.target : null;
    const button = target && target.closest(".message-buttons button");
    if (!button) return;
    if (RATINGS.has(button.getAttribute("aria-label")) ||
        button.classList.contains("extra-feedback-option")) {
      rated = button.closest(".message-buttons");
    }
  }, true);
  function placeFeedback() {
    const pop = document.getElementById("feedback-pop");
    if (!pop || !pop.getClientRects().length) return;
    const bars = document.querySelectorAll("#chat .message-buttons");
    const bar = rated && rated.isConnected ? rated : bars[bars.length - 1];
    if (!bar) return;
    const at = bar.getBoundingClientRect();
    const width = Math.min(440, window.innerWidth - 16);
    pop.style.width = width + "px";
    pop.style.left = Math.max(8, Math.min(at.left, window.innerWidth - width - 8)) + "px";
    const high = pop.offsetHeight;
    const below = at.bottom + 4;
    pop.style.top = (below + high <= window.innerHeight - 8 ? below
                     : Math.max(8, at.top - high - 4)) + "px";
  }

  // The flag menu opens where all of its reasons show (the chat's scroll box clipped it).
  function placeFlagMenu(box) {
    const menu = box.querySelector(".extra-feedback-options");
    if (!menu || !menu.getClientRects().length) return;
    const at = box.getBoundingClientRect();
    menu.style.position = "fixed";
    menu.style.top = "auto";
    const high = menu.offsetHeight;
    const wide = menu.offsetWidth;
    menu.style.left = Math.max(8, Math.min(at.left, window.innerWidth - wide - 8)) + "px";
    // Above the buttons (over the answer) when it fits: the feedback form opens below them.
    menu.style.top = (at.top - high >= 8 ? at.top - high
                      : Math.min(at.bottom, window.innerHeight - high - 8)) + "px";
  }
  for (const kind of ["pointerover", "focusin"]) {
    document.addEventListener(kind, (event) => {
      const box = event.target.closest && event.target.closest(".extra-feedback");
      if (box) requestAnimationFrame(() => placeFlagMenu(box));
    });
  }

  // One click exports: once the file is written, its link is followed (a download).
  const exporting = {};
  const fetched = {};
  document.addEventListener("click", (event) => {
    const button = event.target.closest && event.target.closest("#export-md, #export-html");
    if (button) exporting[button.id.slice(7)] = true;
  }, true);
  function download() {
    for (const kind of Object.keys(exporting)) {
      if (!exporting[kind]) continue;
      const link = document.querySelector(".export-file a[download][href*='conversation." +
                                          kind + "']");
      if (!link || link.href === fetched[kind]) continue;
      fetched[kind] = link.href;
      exporting[kind] = false;
      link.click();
    }
  }

  // A filter completes to a known document or tag on Enter: the first match is chosen
  // (as ArrowDown then Enter would), and text that matches nothing makes no value.
  document.addEventListener("keydown", (event) => {
    if (event.key !== "Enter" || event.isComposing) return;
    const field = event.target.closest && event.target.closest("#filter-documents, #filter-tags");
    if (!field || event.target.tagName !== "INPUT" || !event.target.value.trim()) return;
    const options = field.querySelectorAll("[role=option]");
    if (!options.length) {
      event.preventDefault();
      event.stopImmediatePropagation();
      return;
    }
    if (!field.querySelector("[role=option].active")) {
      event.target.dispatchEvent(new KeyboardEvent("keydown", { key: "ArrowDown",
        bubbles: true, cancelable: true }));
    }
  }, true);

  // A follow-up question asks itself when clicked, as if typed into the question box.
  document.addEventListener("click", (event) => {
    const button = event.target.closest && event.target.closest("#follow-ups button");
    const box = document.querySelector("#chat-input textarea");
    if (!button || !box) return;
    event.preventDefault();
    box.value = button.dataset.question || button.textContent;
    box.dispatchEvent(new Event("input", { bubbles: true }));
    box.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter", bubbles: true,
      cancelable: true }));
  });
  function tendTools() { placeFeedback(); download(); }
  new MutationObserver(() => requestAnimationFrame(tendTools)).observe(document.body,
    { childList: true, subtree: true, attributes: true,
      attributeFilter: ["href", "class", "hidden"] });
"""
