"""The page's own script: copy as read, named icon controls, focus back, shortcuts (`layout`).

It names Gradio's icon-only controls, gives focus back to the question box after each
answer, copies a message as the reader sees it and adds the keyboard shortcuts listed
under the header's ``?`` (`layout.SHORTCUTS`); the tools' script (`tools_script`) runs
inside it. Nothing here loads anything from another host.
"""

from __future__ import annotations

from assistant.web.tools_script import TOOLS_JS

__all__ = ["JS"]

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
