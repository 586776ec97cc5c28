// The chat page at GET /: one self-contained HTML document (no files, no external requests).
// It keeps the conversation in the page, streams each answer from /v1/chat/completions, and
// shows the speed of the answer in tokens per second. When the server sends its model file
// (toy serve --serve-weights), the page can instead run the model itself, on the browser's GPU
// (WebGPU): it loads /toy-browser.js (src/browser/inBrowser.ts), downloads the GGUF from
// /v1/models/{id}/gguf once, and generates the answers there, greedily.

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

export interface PageOptions {
  /** The server sends its weights: offer "in this browser (WebGPU)". */
  inBrowser?: boolean;
}

export function chatPage(model: string, opts: PageOptions = {}): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>toy · ${escapeHtml(model)}</title>
<style>
  body { font: 15px/1.45 system-ui, sans-serif; margin: 0; display: flex; flex-direction: column; height: 100vh; background: #fafafa; }
  header { padding: .6em 1em; border-bottom: 1px solid #ddd; display: flex; gap: 1em; align-items: center; }
  header h1 { font-size: 1em; margin: 0; }
  header input { flex: 0 0 12em; }
  #log { flex: 1; overflow-y: auto; padding: 1em; }
  .msg { max-width: 46em; margin: 0 0 .8em; padding: .5em .8em; border-radius: 6px; white-space: pre-wrap; }
  .user { background: #e3eefc; margin-left: auto; }
  .assistant { background: #fff; border: 1px solid #e4e4e4; }
  .error { background: #fde8e8; }
  .stats { color: #777; font-size: .8em; margin: -.5em 0 .8em; }
  #status { color: #555; font-size: .85em; }
  form { display: flex; gap: .5em; padding: .8em 1em; border-top: 1px solid #ddd; }
  textarea { flex: 1; font: inherit; resize: vertical; min-height: 2.6em; }
</style>
</head>
<body>
<header><h1>toy · <span id="model">${escapeHtml(model)}</span></h1>
  <label>max tokens <input id="max" type="number" value="256" min="1" style="width:5em"></label>
  <label>temperature <input id="temp" type="number" value="0.7" min="0" max="2" step="0.1" style="width:4em"></label>
  <input id="key" type="password" placeholder="API key (if needed)" autocomplete="off">${opts.inBrowser ? `
  <label>run <select id="where"><option value="server">on the server</option><option value="browser">in this browser (WebGPU)</option></select></label>
  <span id="status"></span>` : ""}
  <button id="clear" type="button">clear</button></header>
<div id="log"></div>
<form id="form"><textarea id="input" placeholder="Type a message; Enter sends, Shift+Enter is a new line" autofocus></textarea><button id="send">Send</button></form>
<script>
const model = ${JSON.stringify(model).replace(/</g, "\\u003c")};
const log = document.getElementById("log"), input = document.getElementById("input"), sendButton = document.getElementById("send");
let messages = [];
function bubble(cls, text) {
  const d = document.createElement("div");
  d.className = "msg " + cls; d.textContent = text; log.appendChild(d); log.scrollTop = log.scrollHeight;
  return d;
}
const where = document.getElementById("where"), status = document.getElementById("status");
const authHeaders = () => { const key = document.getElementById("key").value; return key ? { authorization: "Bearer " + key } : {}; };
const megabytes = (n) => (n / 1048576).toFixed(1) + " MB";
// The in-browser model (a promise of it), loaded when first chosen; a failed load may be retried.
let local = null;
function loadLocal() {
  if (local) return local;
  local = (async () => {
    status.textContent = "loading the in-browser runtime…";
    const toy = await import("/toy-browser.js");
    const m = await toy.loadInBrowser("/v1/models/" + encodeURIComponent(model) + "/gguf", { headers: authHeaders(),
      onProgress: (got, total) => { status.textContent = "downloading the model: " + (total ? Math.floor(100 * got / total) + "% of " + megabytes(total) : megabytes(got)); } });
    status.textContent = "ready: in this browser on " + m.adapter.name;
    return m;
  })();
  local.catch((err) => { status.textContent = "error: " + err.message; local = null; });
  return local;
}
if (where) where.onchange = () => {
  if (where.value === "browser") loadLocal().catch(() => {});
  else status.textContent = "";
};
document.getElementById("clear").onclick = () => { messages = []; log.textContent = ""; };
input.addEventListener("keydown", (e) => { if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); document.getElementById("form").requestSubmit(); } });
document.getElementById("form").addEventListener("submit", async (e) => {
  e.preventDefault();
  const text = input.value.trim();
  if (!text || sendButton.disabled) return;
  input.value = ""; sendButton.disabled = true;
  bubble("user", text);
  messages.push({ role: "user", content: text });
  const out = bubble("assistant", ""), stats = document.createElement("div");
  stats.className = "stats"; log.appendChild(stats);
  const headers = { "content-type": "application/json", ...authHeaders() };
  const maxTokens = Number(document.getElementById("max").value) || 256;
  let t0 = performance.now();
  let first = 0, tokens = 0, answer = "", finish = "";
  try {
    if (where && where.value === "browser") {
      const m = await loadLocal();
      t0 = performance.now();
      const r = await m.chat(messages, { maxTokens, temperature: Number(document.getElementById("temp").value), onText: (piece) => {
        if (!first) first = performance.now();
        answer += piece; out.textContent = answer; log.scrollTop = log.scrollHeight;
      } });
      tokens = r.tokens.length; finish = r.finishReason + " · in this browser";
      stats.dataset.tokens = JSON.stringify(r.tokens);
    } else {
      const res = await fetch("/v1/chat/completions", { method: "POST", headers, body: JSON.stringify({
        model, messages, stream: true, stream_options: { include_usage: true },
        max_tokens: maxTokens,
        temperature: Number(document.getElementById("temp").value),
      }) });
      if (!res.ok) throw new Error((await res.json()).error?.message ?? res.statusText);
      const reader = res.body.getReader(), decoder = new TextDecoder();
      let buffer = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += decoder.decode(value, { stream: true });
        let cut;
        while ((cut = buffer.indexOf("\\n\\n")) !== -1) {
          const event = buffer.slice(0, cut); buffer = buffer.slice(cut + 2);
          if (!event.startsWith("data: ")) continue;
          const data = event.slice(6);
          if (data === "[DONE]") continue;
          const chunk = JSON.parse(data);
          if (chunk.error) throw new Error(chunk.error.message);
          if (chunk.usage) tokens = chunk.usage.completion_tokens;
          const c = chunk.choices[0];
          if (!c) continue;
          if (c.delta.content) {
            if (!first) first = performance.now();
            answer += c.delta.content; out.textContent = answer; log.scrollTop = log.scrollHeight;
          }
          if (c.finish_reason) finish = c.finish_reason;
        }
      }
    }
    const secs = (performance.now() - (first || t0)) / 1000;
    stats.textContent = tokens + " tokens · " + (secs > 0 && tokens > 1 ? ((tokens - 1) / secs).toFixed(1) : "–") + " tokens/s · first token after " + ((first - t0) / 1000).toFixed(2) + " s · " + finish;
    stats.dataset.done = "1";
    messages.push({ role: "assistant", content: answer });
  } catch (err) {
    out.className = "msg error"; out.textContent = "error: " + err.message;
    stats.dataset.done = "1";
    messages.pop();
  } finally {
    sendButton.disabled = false; input.focus();
  }
});
</script>
</body>
</html>
`;
}
