"""The page's own CSS and script: a centred reading column, tables that scroll, clean copy.

Gradio's defaults stretch the chat over the whole window width (lines of 1,850 px), let
wide tables collapse to one letter per line on a phone, and copy a message as its
Markdown source (``&gt;`` entities, app-relative ``/doc/...`` links). Nothing here
loads anything from another host.
"""

from __future__ import annotations

__all__ = ["CSS", "JS", "READING_WIDTH_PX"]

# About 90 characters a line at the chat's font size.
READING_WIDTH_PX = 880

CSS = f"""
.gradio-container {{ max-width: min({READING_WIDTH_PX}px, 100vw) !important;
  margin: 0 auto !important; }}
/* Flex items default to min-width: auto, so one wide table widened the whole page. */
.gradio-container, .gradio-container .main, .gradio-container main, .gradio-container .wrap,
.gradio-container .column, .bubble-wrap, .message-wrap {{
  min-width: 0 !important; max-width: 100%; }}
/* Rows keep Gradio's own widths and margins; they only may shrink below their content. */
.message-row, .message-row .flex-wrap, .message-row .message {{ min-width: 0 !important; }}
#chat-header {{ gap: 0.5rem; align-items: center; flex-wrap: nowrap; }}
#chat-header h1 {{ margin: 0; font-size: 1.5rem; }}
#chat-status p {{ margin: 0; color: var(--body-text-color-subdued); font-size: 0.85rem; }}
#new-chat {{ flex-grow: 0; min-width: max-content; }}
/* On a phone the kept conversations take a line of their own under the title. */
@media (max-width: 640px) {{
  #chat-header {{ flex-wrap: wrap; }}
  #previous-chats {{ order: 3; flex-basis: 100%; }}
}}
.message-content table {{ display: block; max-width: 100%; overflow-x: auto; }}
.message-content th, .message-content td {{ min-width: 7rem; overflow-wrap: normal !important;
  word-break: normal !important; }}
.message-content pre {{ white-space: pre-wrap; overflow-wrap: anywhere; }}
.message-content pre code {{ white-space: pre-wrap; }}
"""

# Copy a message as the reader sees it: rendered text, links spelled out in full.
# Runs in the capture phase so Gradio's own handler (Markdown source) does not.
JS = """
() => {
  const BLOCKS = new Set(["P", "LI", "TR", "BLOCKQUOTE", "PRE", "H1", "H2", "H3", "H4",
                          "H5", "H6", "UL", "OL", "TABLE", "DIV"]);
  function textOf(node) {
    if (node.nodeType === Node.TEXT_NODE) return node.textContent;
    if (node.nodeType !== Node.ELEMENT_NODE) return "";
    if (node.tagName === "BR") return "\\n";
    if (node.tagName === "BUTTON" || node.tagName === "svg") return "";
    let inner = Array.from(node.childNodes).map(textOf).join("");
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
}
"""
