/**
 * The console's markdown: a tiny renderer for model text. Safe by construction: it escapes the whole text first,
 * then turns a few constructs back into tags (fenced code blocks, inline code, bold, lists, headings as bold
 * lines, links with http(s) targets only). Nothing of the model's text can become a tag or an attribute of its
 * own: every `<`, `>`, `"`, `'` and `&` is an entity before any rule runs.
 */
function escapeHtml(s: string): string {
  return s
    .replace(/&/g, "&amp;")
    .replace(/</g, "&lt;")
    .replace(/>/g, "&gt;")
    .replace(/"/g, "&quot;")
    .replace(/'/g, "&#39;");
}

function markdownInline(text: string): string {
  const codes: string[] = [];
  let s = text.replace(/`([^`\n]+)`/g, (_, c: string) => `\u0000${codes.push(c) - 1}\u0000`);
  s = s.replace(/\*\*([^*\n]+?)\*\*/g, "<strong>$1</strong>");
  // Links: an http(s) target only (javascript:, data: and the rest stay text); the target is escaped text already.
  s = s.replace(
    /\[([^\]\n]+)\]\((https?:\/\/[^\s()]+)\)/g,
    (_, t: string, u: string) => `<a href="${u}" target="_blank" rel="noopener noreferrer nofollow">${t}</a>`,
  );
  return s.replace(/\u0000(\d+)\u0000/g, (_, n: string) => `<code>${codes[Number(n)]}</code>`);
}

export function renderMarkdown(src: string | null | undefined): string {
  const lines = escapeHtml(String(src ?? "").replace(/\u0000/g, ""))
    .replace(/\r\n?/g, "\n")
    .split("\n");
  const out: string[] = [];
  let para: string[] = [];
  let list: { tag: "ul" | "ol"; items: string[] } | undefined;
  const flushPara = () => {
    if (para.length) out.push(`<p>${markdownInline(para.join("\n")).replace(/\n/g, "<br>")}</p>`);
    para = [];
  };
  const flushList = () => {
    if (list) out.push(`<${list.tag}>${list.items.map((t) => `<li>${markdownInline(t)}</li>`).join("")}</${list.tag}>`);
    list = undefined;
  };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    if (/^\s*```/.test(line)) {
      flushPara();
      flushList();
      const code: string[] = [];
      for (i++; i < lines.length && !/^\s*```\s*$/.test(lines[i]); i++) code.push(lines[i]);
      out.push(`<pre><code>${code.join("\n")}</code></pre>`);
      continue;
    }
    const item = /^\s*(?:([-*+])|(\d+)[.)])\s+(.*)$/.exec(line);
    if (item) {
      flushPara();
      const tag = item[1] ? "ul" : "ol";
      if (list && list.tag !== tag) flushList();
      list ??= { tag, items: [] };
      list.items.push(item[3]);
    } else if (/^#{1,6}\s+/.test(line)) {
      flushPara();
      flushList();
      out.push(`<p class="h">${markdownInline(line.replace(/^#{1,6}\s+/, ""))}</p>`);
    } else if (/^\s*$/.test(line)) {
      flushPara();
      flushList();
    } else if (list && /^\s+\S/.test(line)) {
      list.items[list.items.length - 1] += ` ${line.trim()}`;
    } else {
      flushList();
      para.push(line);
    }
  }
  flushPara();
  flushList();
  return out.join("");
}
