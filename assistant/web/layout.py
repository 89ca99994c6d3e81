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

from assistant.web.page_script import JS
from assistant.web.tools_script import TOOLS_CSS

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
  /* The title's block grows from nothing, but never below the title's one line (at
     min-width 0 the buttons sat over "Policy assistant"). */
  #chat-header > .block:first-child {{ min-width: 10rem !important; }}
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
