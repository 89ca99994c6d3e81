"""The page's own CSS and script: a full-height reading column, named controls, shortcuts.

The chat scrolls inside a page exactly as tall as the window, so the question box stays
in view (at the bottom) after any number of answers, on a desktop and on a phone. Text
meets WCAG AA contrast (4.5:1) and focus shows a ring. The script names Gradio's
icon-only controls, gives focus back to the question box after each answer and adds the
keyboard shortcuts listed under the header's ``?`` (`SHORTCUTS`).

Gradio's defaults stretch the chat over the whole window width (lines of 1,850 px), let
wide tables collapse to one letter per line on a phone, and copy a message as its
Markdown source (``&gt;`` entities, app-relative ``/doc/...`` links). Nothing here
loads anything from another host.
"""

from __future__ import annotations

from assistant.web.tools_script import TOOLS_CSS, TOOLS_JS

__all__ = ["CSS", "HEAD", "JS", "READING_WIDTH_PX", "SHORTCUTS", "SHORTCUTS_HTML"]

# About 90 characters a line at the chat's font size.
READING_WIDTH_PX = 880

# What a key does, as the ``?`` help lists it; `JS` implements each.
SHORTCUTS = (
    ("Enter", "send the question"),
    ("Shift+Enter", "new line"),
    ("Esc", "stop the answer"),
    ("Ctrl+Shift+O", "new chat"),
    ("Shift+Esc", "go to the question box"),
)
SHORTCUTS_HTML = (
    '<details id="shortcuts-help"><summary aria-label="Keyboard shortcuts" '
    'title="Keyboard shortcuts">?</summary><dl>'
    + "".join(f"<dt><kbd>{key}</kbd></dt><dd>{what}</dd>" for key, what in SHORTCUTS)
    + "</dl></details>"
)

# Darker than Gradio's greys (#bbbbc2 on white is 1.91:1); every pair here is >= 4.5:1.
SUBDUED_TEXT = "#5c5c66"
FOCUS_RING = "#1d4ed8"
# The same roles in dark mode (Gradio puts ``.dark`` on the body when the OS asks for it):
# subdued 7.4:1 on Gradio's dark page (#0f0f11), ink and links over 8:1 on the surface.
DARK_SUBDUED_TEXT = "#a1a1aa"
DARK_INK = "#f3f4f6"
DARK_SURFACE = "#1f2937"
DARK_LINK = "#93c5fd"

CSS = (
    f"""
/* A set width, not only a maximum: the column shrank to its content on the landing page
   and while an answer streamed (794, 763 then 880 px at 1440 px wide). */
.gradio-container {{ width: min({READING_WIDTH_PX}px, 100vw) !important;
  max-width: min({READING_WIDTH_PX}px, 100vw) !important; margin: 0 auto !important; }}
:root, .gradio-container {{ --pa-subdued: {SUBDUED_TEXT}; --pa-ink: #1f2937;
  --pa-surface: #fff; --pa-link: {FOCUS_RING}; --pa-focus: {FOCUS_RING};
  --body-text-color-subdued: var(--pa-subdued);
  --block-info-text-color: var(--pa-subdued); --input-placeholder-color: var(--pa-subdued);
  --block-label-text-color: var(--pa-subdued); }}
/* Gradio forces no colour of ours on the dark theme: each role gets its dark value. The
   popovers hang from the body, outside the container, so ``.dark`` itself holds them. */
.dark, .dark .gradio-container {{ --pa-subdued: {DARK_SUBDUED_TEXT}; --pa-ink: {DARK_INK};
  --pa-surface: {DARK_SURFACE}; --pa-link: {DARK_LINK}; --pa-focus: {DARK_LINK}; }}
/* The page is exactly the window's height; the chat scrolls inside it and the question box
   stays at the bottom. dvh follows a phone's collapsing address bar. */
html, body, gradio-app {{ height: 100%; }}
.gradio-container {{ height: 100vh; height: 100dvh; min-height: 0 !important; }}
.gradio-container > .main, .gradio-container .wrap, .gradio-container main.contain {{
  min-height: 0 !important; }}
.gradio-container main.contain {{ overflow-y: auto; }}
.gradio-container main.contain .column {{ min-height: 0 !important; }}
#chat {{ flex: 1 1 0 !important; min-height: 12rem !important; }}
.gradio-container footer {{ margin-top: 0 !important; padding: 2px 0 !important; }}
.gradio-container footer, .gradio-container footer * {{ color: var(--pa-subdued) !important; }}
/* Staff have no use for Gradio's API page (the API has its own documented door); without
   it the footer holds only a divider. */
.gradio-container footer {{ display: none !important; }}
/* The "scroll down" button sits in a lane of its own at the chat's right edge: in the
   middle it covered the Sources summary of an answer shown from its start. */
#chat .scroll-down-button-container {{ left: auto !important; right: 2px !important;
  transform: none !important; bottom: 6px !important; }}
#chat .message-row {{ padding-right: 2.5rem; }}
#tools-toggle {{ display: none; }}
/* Gradio's elapsed-time counter ("0.1s") fades over the chat while an answer starts:
   staff need no stopwatch, and half faded it is unreadable (contrast under 4.5:1). */
.gradio-container .progress-text {{ display: none !important; }}
/* A ring on whatever has the keyboard focus, the question box included. */
.gradio-container :focus-visible, #chat-input textarea:focus {{
  outline: 3px solid var(--pa-focus) !important; outline-offset: 1px; }}
#shortcuts-help {{ position: relative; flex-grow: 0; }}
#shortcuts-help summary {{ list-style: none; cursor: pointer; width: 2rem; height: 2rem;
  border-radius: 50%; border: 1px solid {SUBDUED_TEXT}; text-align: center;
  line-height: 1.9rem; font-weight: 600; }}
#shortcuts-help summary::-webkit-details-marker {{ display: none; }}
#shortcuts-help dl {{ position: absolute; right: 0; z-index: 20; margin: 0.25rem 0 0;
  padding: 0.5rem 0.75rem; min-width: 17rem; display: grid; grid-template-columns: auto 1fr;
  gap: 0.25rem 0.75rem; background: var(--block-background-fill, #fff);
  border: 1px solid {SUBDUED_TEXT}; border-radius: 6px; }}
#shortcuts-help dd {{ margin: 0; }}
/* A citation's passage, in place over the chat. */
#citation-pop {{ position: fixed; z-index: 50; box-sizing: border-box;
  padding: 0.75rem 2.25rem 0.75rem 0.75rem;
  background: var(--pa-surface); color: var(--pa-ink); border: 1px solid var(--pa-subdued);
  border-radius: 8px;
  box-shadow: 0 6px 24px rgba(0, 0, 0, 0.18); font-size: 0.95rem; max-height: 60vh;
  overflow-y: auto; }}
#citation-pop .citation-path {{ margin: 0 0 0.5rem; font-weight: 600; }}
#citation-pop blockquote {{ margin: 0 0 0.5rem; padding-left: 0.6rem;
  border-left: 3px solid var(--pa-link); }}
#citation-pop a {{ color: var(--pa-link); text-decoration: underline; }}
#citation-pop .citation-close {{ position: absolute; top: 0.25rem; right: 0.25rem;
  width: 2rem; height: 2rem; font-size: 1.25rem; background: none; border: 0;
  color: var(--pa-ink); cursor: pointer; }}
/* Flex items default to min-width: auto, so one wide table widened the whole page. */
.gradio-container, .gradio-container .main, .gradio-container main, .gradio-container .wrap,
.gradio-container .column, .bubble-wrap, .message-wrap {{
  min-width: 0 !important; max-width: 100%; }}
/* Rows keep Gradio's own widths and margins; they only may shrink below their content. */
.message-row, .message-row .flex-wrap, .message-row .message {{ min-width: 0 !important; }}
#chat-header {{ gap: 0.5rem; align-items: center; flex-wrap: nowrap; }}
#chat-header h1 {{ margin: 0; font-size: 1.5rem; overflow-wrap: normal; word-break: normal; }}
#chat-status p {{ margin: 0; color: var(--body-text-color-subdued); font-size: 0.85rem; }}
#new-chat {{ flex-grow: 0; min-width: max-content; }}
/* On a phone the conversation gets the screen: a one-line header and status, and the
   filters, downloads and recent changes folded under the input behind one toggle (the
   page's script marks them ``pa-folded``). The kept conversations take a line of their
   own under the title. Gradio scopes a media rule's selectors to its ``.contain``, so
   these name what is inside it; the app's own padding shrinks with a clamp. */
.gradio-container > .main {{
  padding-top: clamp(4px, calc((100vw - 640px) * 100), 16px) !important;
  padding-bottom: clamp(4px, calc((100vw - 640px) * 100), 16px) !important; }}
@media (max-width: 640px) {{
  .column, .gr-group {{ gap: 6px !important; }}
  #chat-header {{ flex-wrap: wrap; gap: 0.25rem; }}
  #chat-header > .block:first-child, #chat-header .prose {{ min-width: 0 !important;
    flex: 1 1 0 !important; }}
  #previous-chats {{ order: 3; flex-basis: 100%; }}
  #chat-header h1 {{ font-size: 1.05rem; white-space: nowrap; }}
  #chat-status p {{ font-size: 0.75rem; white-space: nowrap; overflow: hidden;
    text-overflow: ellipsis; }}
  #chat {{ min-height: 0 !important; }}
  .pa-folded {{ display: none !important; }}
  #tools-toggle {{ display: block; width: 100%; padding: 0.35rem 0.5rem; text-align: left;
    font-size: 0.9rem; background: none; color: var(--pa-ink);
    border: 1px solid var(--pa-subdued); border-radius: 6px; cursor: pointer; }}
}}
.message-content table {{ display: block; max-width: 100%; overflow-x: auto; }}
.message-content .table-hint {{ margin: 0.25rem 0; font-size: 0.85rem;
  color: var(--pa-subdued); }}
.message-content th, .message-content td {{ min-width: 7rem; overflow-wrap: normal !important;
  word-break: normal !important; }}
.message-content pre {{ white-space: pre-wrap; overflow-wrap: anywhere; }}
.message-content pre code {{ white-space: pre-wrap; }}
"""
    + TOOLS_CSS
)

# Names for Gradio's icon-only controls (a screen reader otherwise says "button"), from
# the page's head: its observer is there before Gradio mounts anything, so no button is
# ever nameless (set from `JS`, which runs once the app has loaded, a button could be
# read without its name first; a loaded test run did). Named again whenever Gradio
# mounts one anew (Send after Stop).
HEAD = """<script>
(() => {
  // A random id of this browser, so a reload gets back the turn it was waiting for
  // (`in_flight`). getRandomValues works on plain http too; randomUUID does not.
  if (!document.cookie.split("; ").some((c) => c.startsWith("pa_browser="))) {
    const bytes = crypto.getRandomValues(new Uint8Array(16));
    const id = Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
    document.cookie = "pa_browser=" + id + "; path=/; max-age=31536000; SameSite=Strict";
  }
  const NAMES = [["#chat-input .submit-button", "Send question"],
                 ["#chat-input .stop-button", "Stop the answer"]];
  function name() {
    for (const [selector, label] of NAMES) {
      document.querySelectorAll(selector).forEach((button) => {
        if (!button.getAttribute("aria-label")) button.setAttribute("aria-label", label);
      });
    }
  }
  new MutationObserver(name).observe(document.documentElement, { childList: true,
                                                                  subtree: true });
})();
</script>"""

# Copy a message as the reader sees it: rendered text, links spelled out in full.
# Runs in the capture phase so Gradio's own handler (Markdown source) does not.
JS = (
    """
() => {
  const BLOCKS = new Set(["P", "LI", "TR", "BLOCKQUOTE", "PRE", "H1", "H2", "H3", "H4",
                          "H5", "H6", "UL", "OL", "TABLE", "DIV"]);
  function textOf(node) {
    if (node.nodeType === Node.TEXT_NODE) return node.textContent;
    if (node.nodeType !== Node.ELEMENT_NODE) return "";
    if (node.tagName === "BR") return "\\n";
    if (node.tagName === "BUTTON" || node.tagName === "svg") return "";
    let inner = Array.from(node.childNodes).map(textOf).join("");
    // A citation link copies as its marker: the Sources below it name the place.
    if (node.tagName === "A" && /^\\[\\d+\\]$/.test(inner.trim())) return inner;
    if (node.tagName === "A" && node.href && !node.href.startsWith("javascript:")) {
      inner = inner.trim() === node.href ? node.href : inner + " (" + node.href + ")";
    }
    if (node.tagName === "TD" || node.tagName === "TH") return inner.trim() + "\\t";
    if (node.tagName === "LI") inner = "- " + inner.trim();
    return BLOCKS.has(node.tagName) ? "\\n" + inner.trim() + "\\n" : inner;
  }
  function titleOf(group) {
    const title = group.querySelector(".title");
    return title ? title.innerText.trim() : "";
  }
  function messageText(message) {
    const group = message.querySelector(".thought-group");
    const heading = group ? titleOf(group) : "";
    if (heading === "Trace") return "";
    const content = message.querySelectorAll(".message-content");
    const body = Array.from(content).map(textOf).join("\\n");
    return (heading ? heading + "\\n" : "") + body;
  }
  async function copyRow(row) {
    // A collapsed panel (the Sources summary) has no content in the page: open it
    // for the moment it takes to read, then close it again.
    const closed = Array.from(row.querySelectorAll(".thought-group"))
      .filter((group) => !group.querySelector(".content") && titleOf(group) !== "Trace");
    closed.forEach((group) => group.querySelector(".title").click());
    await new Promise((resolve) => setTimeout(resolve, 60));
    const messages = row.querySelectorAll(".message:not(.bot):not(.user)");
    const parts = Array.from(messages).map(messageText);
    const text = parts.join("\\n\\n").replace(/[ \\t]+\\n/g, "\\n")
      .replace(/\\n{3,}/g, "\\n\\n").trim();
    closed.forEach((group) => group.querySelector(".title").click());
    await navigator.clipboard.writeText(text);
  }
  document.addEventListener("click", (event) => {
    const target = event.target;
    const button = target.closest && target.closest('button[aria-label="Copy message"]');
    if (!button) return;
    const bar = button.closest(".message-buttons");
    const row = bar && bar.previousElementSibling;
    if (!row || !row.classList.contains("message-row")) return;
    event.stopPropagation();
    event.preventDefault();
    copyRow(row);
  }, true);
  // Say what New chat does before it is clicked (a line under the header says it after).
  // Set at once and again whenever Gradio (re)mounts the button: a mutation observer
  // runs before any other task, so no reader ever sees the button without its hint
  // (a 200 ms poll left a window in which the restored chat showed and it had none).
  const HINT = "Start a new conversation; this one stays under Previous conversations";
  function hint() {
    const button = document.getElementById("new-chat");
    if (button && button.title !== HINT) button.title = HINT;
  }
  hint();
  new MutationObserver(hint).observe(document.body, { childList: true, subtree: true });

  // The toggle inside a Sources or Trace title duplicates the title's own role=button.
  const input = () => document.querySelector("#chat-input textarea");
  let busy = false;
  function tend() {
    document.querySelectorAll(".thought-group .title button.icon-button").forEach((inner) => {
      if (inner.getAttribute("aria-hidden") === "true") return;
      inner.setAttribute("aria-hidden", "true");
      inner.setAttribute("tabindex", "-1");
    });
    // A table wider than its box says so: on a phone most columns are out of sight.
    document.querySelectorAll(".message-content table").forEach((table) => {
      const hint = table.previousElementSibling;
      const has = hint && hint.classList.contains("table-hint");
      const wide = table.scrollWidth > table.clientWidth + 1;
      if (wide && !has) {
        const note = document.createElement("p");
        note.className = "table-hint";
        const columns = table.rows.length ? table.rows[0].cells.length : 0;
        note.textContent = "Scroll sideways to see all " + columns + " columns \u2192";
        table.before(note);
      } else if (!wide && has) {
        hint.remove();
      }
    });
    // Focus back in the question box once an answer has finished.
    const box = input();
    const now = Boolean(document.querySelector("#chat-input .stop-button")) ||
      Boolean(box && box.disabled);
    if (busy && !now && box) {
      const away = document.activeElement;
      if (!away || away === document.body || away.closest("#chat, #chat-input")) box.focus();
    }
    busy = now;
    if (now) showAnswerStart();
    fold();
  }
  let queued = false;
  new MutationObserver(() => {
    if (queued) return;
    queued = true;
    requestAnimationFrame(() => { queued = false; tend(); });
  }).observe(document.body, { childList: true, subtree: true, attributes: true,
                               attributeFilter: ["disabled"] });

  // A citation [n] opens its passage in place: the section path (the link's title),
  // the cited sentence (its passage= parameter) and a link to the viewer.
  function closeCitation() {
    const open = document.getElementById("citation-pop");
    if (!open) return false;
    const from = open.citedFrom;
    open.remove();
    if (from && from.isConnected) from.focus();
    return true;
  }
  function showCitation(link) {
    closeCitation();
    const pop = document.createElement("div");
    pop.id = "citation-pop";
    pop.setAttribute("role", "dialog");
    const path = link.getAttribute("title") || link.textContent;
    pop.setAttribute("aria-label", "Source " + path);
    const heading = document.createElement("p");
    heading.className = "citation-path";
    heading.textContent = path;
    pop.appendChild(heading);
    const passage = new URL(link.href).searchParams.get("passage");
    if (passage) {
      const quote = document.createElement("blockquote");
      quote.textContent = passage;
      pop.appendChild(quote);
    }
    const open = document.createElement("a");
    open.href = link.href;
    open.target = "_blank";
    open.textContent = "Open in the document";
    pop.appendChild(open);
    const close = document.createElement("button");
    close.type = "button";
    close.className = "citation-close";
    close.setAttribute("aria-label", "Close the source");
    close.textContent = "\\u00d7";
    close.addEventListener("click", closeCitation);
    pop.appendChild(close);
    pop.citedFrom = link;
    document.body.appendChild(pop);
    const at = link.getBoundingClientRect();
    const width = Math.min(420, window.innerWidth - 16);
    pop.style.width = width + "px";
    pop.style.left = Math.max(8, Math.min(at.left, window.innerWidth - width - 8)) + "px";
    const below = at.bottom + 6;
    const high = pop.offsetHeight;
    pop.style.top = (below + high <= window.innerHeight ? below
                     : Math.max(8, at.top - high - 6)) + "px";
    open.focus();
  }
  document.addEventListener("click", (event) => {
    const target = event.target.closest ? event.target : null;
    const link = target && target.closest(".message-content a[href*='/doc/']");
    if (link && /^\\[\\d+\\]$/.test(link.textContent.trim())) {
      event.preventDefault();
      event.stopPropagation();
      showCitation(link);
    } else if (!(target && target.closest("#citation-pop"))) {
      closeCitation();
    }
  }, true);

  // A new answer is shown from its start (its question at the top of the chat), not
  // from its end: set once per answer, when its first update arrives.
  let shownFrom = 0;
  function showAnswerStart() {
    const rows = document.querySelectorAll("#chat .message-row");
    const asked = document.querySelectorAll("#chat .message-row.user-row");
    if (!asked.length || asked.length === shownFrom) return;
    const last = asked[asked.length - 1];
    if (rows[rows.length - 1] === last) return;  // no answer yet
    shownFrom = asked.length;
    last.scrollIntoView({ block: "start" });
  }
  // On a phone the filters, downloads and recent changes fold behind one toggle.
  function tools() {
    const accordions = Array.from(document.querySelectorAll(".gr-accordion"));
    const named = (text) => accordions.find((a) => a.innerText.trim().startsWith(text));
    return [named("Filters"), document.getElementById("export-row"),
            named("Recent policy changes")].filter(Boolean);
  }
  const narrow = window.matchMedia("(max-width: 640px)");
  function fold() {
    const parts = tools();
    let toggle = document.getElementById("tools-toggle");
    if (!narrow.matches) {  // a wide screen shows them all, with no toggle in the way
      if (toggle) toggle.remove();
      parts.forEach((part) => part.classList.remove("pa-folded"));
      return;
    }
    if (!parts.length) return;
    if (!toggle) {
      toggle = document.createElement("button");
      toggle.id = "tools-toggle";
      toggle.type = "button";
      toggle.setAttribute("aria-expanded", "false");
      toggle.textContent = "Filters, downloads and recent changes \u25b8";
      toggle.addEventListener("click", () => {
        const open = toggle.getAttribute("aria-expanded") !== "true";
        toggle.setAttribute("aria-expanded", String(open));
        toggle.textContent = "Filters, downloads and recent changes " +
          (open ? "\u25be" : "\u25b8");
        tools().forEach((part) => part.classList.toggle("pa-folded", !open));
      });
      parts[0].before(toggle);
    }
    const open = toggle.getAttribute("aria-expanded") === "true";
    parts.forEach((part) => {
      if (part.classList.contains("pa-folded") === open) part.classList.toggle("pa-folded", !open);
    });
  }
  fold();
  narrow.addEventListener("change", fold);

  // Open WebUI's bindings: Esc stops, Ctrl+Shift+O starts a new chat, Shift+Esc goes
  // to the question box.
  document.addEventListener("keydown", (event) => {
    if (event.key === "Escape" && !event.shiftKey && closeCitation()) {
      event.preventDefault();
    } else if (event.key === "Escape" && event.shiftKey) {
      const box = input();
      if (box) { event.preventDefault(); box.focus(); }
    } else if (event.key === "Escape") {
      const stop = document.querySelector("#chat-input .stop-button");
      if (stop) { event.preventDefault(); stop.click(); }
    } else if ((event.ctrlKey || event.metaKey) && event.shiftKey &&
               event.key.toLowerCase() === "o") {
      const button = document.getElementById("new-chat");
      if (button) {
        event.preventDefault();
        button.click();
        const box = input();
        if (box) box.focus();
        // Gradio may redraw the box as the chat empties: focus it again once done.
        setTimeout(() => { const again = input(); if (again) again.focus(); }, 300);
      }
    }
  }, true);
"""
    + TOOLS_JS
    + """
}
"""
)
