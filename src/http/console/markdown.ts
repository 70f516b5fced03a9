/**
 * The console's markdown: a tiny renderer for model text, shipped to the browser as source. Safe by
 * construction: it escapes the whole text first, then turns a few constructs back into tags (fenced code
 * blocks, inline code, bold, lists, headings as bold lines, links with http(s) targets only). Nothing of the
 * model's text can become a tag or an attribute of its own: every `<`, `>`, `"`, `'` and `&` is an entity
 * before any rule runs. Written without backticks (String.raw): `\x60` is one in the regular expressions.
 */
export const MARKDOWN_JS = String.raw`
function escapeHtml(s) {
  return String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;").replace(/'/g, "&#39;");
}
function markdownInline(s) {
  var codes = [];
  s = s.replace(/\x60([^\x60\n]+)\x60/g, function (_, c) { codes.push(c); return "\u0000" + (codes.length - 1) + "\u0000"; });
  s = s.replace(/\*\*([^*\n]+?)\*\*/g, "<strong>$1</strong>");
  // Links: an http(s) target only (javascript:, data: and the rest stay text); the target is escaped text already.
  s = s.replace(/\[([^\]\n]+)\]\((https?:\/\/[^\s()]+)\)/g, function (_, t, u) {
    return '<a href="' + u + '" target="_blank" rel="noopener noreferrer nofollow">' + t + "</a>";
  });
  return s.replace(/\u0000(\d+)\u0000/g, function (_, n) { return "<code>" + codes[Number(n)] + "</code>"; });
}
function renderMarkdown(src) {
  var lines = escapeHtml(String(src == null ? "" : src).replace(/\u0000/g, "")).replace(/\r\n?/g, "\n").split("\n");
  var out = [], para = [], list = null, i = 0;
  function flushPara() { if (para.length) { out.push("<p>" + markdownInline(para.join("\n")).replace(/\n/g, "<br>") + "</p>"); para = []; } }
  function flushList() {
    if (!list) return;
    out.push("<" + list.tag + ">" + list.items.map(function (t) { return "<li>" + markdownInline(t) + "</li>"; }).join("") + "</" + list.tag + ">");
    list = null;
  }
  while (i < lines.length) {
    var line = lines[i];
    if (/^\s*\x60\x60\x60/.test(line)) {
      flushPara(); flushList();
      var code = [];
      for (i++; i < lines.length && !/^\s*\x60\x60\x60\s*$/.test(lines[i]); i++) code.push(lines[i]);
      i++;
      out.push("<pre><code>" + code.join("\n") + "</code></pre>");
      continue;
    }
    var item = /^\s*(?:([-*+])|(\d+)[.)])\s+(.*)$/.exec(line);
    if (item) {
      flushPara();
      var tag = item[1] ? "ul" : "ol";
      if (list && list.tag !== tag) flushList();
      if (!list) list = { tag: tag, items: [] };
      list.items.push(item[3]);
    } else if (/^#{1,6}\s+/.test(line)) {
      flushPara(); flushList();
      out.push('<p class="h">' + markdownInline(line.replace(/^#{1,6}\s+/, "")) + "</p>");
    } else if (/^\s*$/.test(line)) {
      flushPara(); flushList();
    } else if (list && /^\s+\S/.test(line)) {
      list.items[list.items.length - 1] += " " + line.trim();
    } else {
      flushList();
      para.push(line);
    }
    i++;
  }
  flushPara(); flushList();
  return out.join("");
}
`;
