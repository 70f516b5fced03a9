/** The console's stylesheet (served as /console/style.css; no inline styles, so the CSP needs no 'unsafe-inline'). */
export const CONSOLE_CSS = `
*{box-sizing:border-box}
body{font:14px/1.45 system-ui,sans-serif;margin:0;background:#f6f7f9;color:#1b1f24}
header{background:#1b1f24;color:#fff;padding:10px 16px;display:flex;gap:12px;align-items:center}
header .brand{color:#fff;font-weight:700;text-decoration:none} header .muted{color:#9aa4ae} .grow{flex:1}
main{max-width:1100px;margin:0 auto;padding:16px}
h2{font-size:16px;margin:8px 0}
a{color:#1d4ed8}
.muted{color:#6b7280} .err{color:#b91c1c}
.timeline{border:1px solid #e5e7eb;border-radius:6px;padding:4px 12px;margin:8px 0} .timeline summary{cursor:pointer;font-weight:600}
.tl-legend{display:flex;flex-wrap:wrap;gap:10px;font-size:12px;margin:4px 0} .tl-key{display:inline-flex;align-items:center;gap:4px}
.tl-swatch{display:inline-block;width:12px;height:8px;border-radius:2px} .tl-row{display:flex;align-items:center;gap:8px;margin:4px 0}
.tl-label{width:130px;flex:none;font-size:12px;color:#374151} .tl-track{position:relative;flex:1;height:30px;background:#f9fafb;border-radius:4px}
.tl-bar{position:absolute;height:6px;border-radius:3px;min-width:2px}
.kind-model{background:#10b981} .kind-tool{background:#3b82f6} .kind-worker-wait{background:#9ca3af} .kind-retry{background:#ef4444}
.kind-approval{background:#f59e0b} .kind-client{background:#8b5cf6} .kind-other{background:#6b7280}
.outcome{border:1px solid #e5e7eb;border-radius:6px;padding:8px 12px;margin:8px 0} .outcome h3{margin:4px 0;font-size:14px}
.outcome pre.result{white-space:pre-wrap;word-break:break-word;background:#f3f4f6;padding:6px 8px;border-radius:4px;margin:4px 0} .num{text-align:right;font-variant-numeric:tabular-nums}
button{padding:5px 12px;cursor:pointer;border:1px solid #c7ced6;border-radius:5px;background:#fff;font:inherit}
button.primary{background:#1d4ed8;border-color:#1d4ed8;color:#fff} button.danger{border-color:#dc2626;color:#b91c1c}
button:disabled{opacity:.45;cursor:not-allowed}
input,select,textarea{font:inherit;padding:5px 8px;border:1px solid #c7ced6;border-radius:5px;background:#fff}
textarea{width:100%;resize:vertical}
.notice{max-width:1100px;margin:8px auto 0;padding:0 16px;min-height:0}
.notice.error{color:#b91c1c} .notice.ok{color:#047857}
.login{max-width:480px;margin:40px auto;background:#fff;border:1px solid #d8dde3;border-radius:8px;padding:16px 20px}
.login input{width:100%;margin:8px 0}
section.newrun,section.runs,section.composer,section.runhead{background:#fff;border:1px solid #d8dde3;border-radius:8px;padding:12px 16px;margin:12px 0}
.newrun label{display:block;margin:6px 0} .newrun label>span{display:block;font-weight:600;margin-bottom:2px}
.newrun fieldset{border:1px solid #d8dde3;border-radius:5px} .tool-pick{display:inline-block;margin-right:12px}
.filters{display:flex;gap:6px;flex-wrap:wrap;margin-bottom:8px}
.filters button[aria-pressed=true]{background:#1b1f24;color:#fff;border-color:#1b1f24}
.filter-form{display:flex;gap:6px;flex-wrap:wrap;margin-bottom:8px} .filter-form input:not([type]){flex:1;min-width:180px}
table.runs-table{width:100%;border-collapse:collapse}
.runs-table th{text-align:left;font-weight:600;border-bottom:2px solid #d8dde3;padding:6px}
.runs-table td{border-bottom:1px solid #eceff2;padding:6px;vertical-align:top}
.runs-table tbody tr{cursor:pointer} .runs-table tbody tr:hover{background:#f3f6fa}
.runs-table tr.pinned{background:#fff7ed} .runs-table .id{font-size:12px}
.pager{display:flex;gap:10px;align-items:center;margin-top:8px}
.badge{display:inline-block;padding:1px 8px;border-radius:10px;background:#e5e7eb;font-size:12px;font-weight:600;white-space:nowrap}
.status-running{background:#dbeafe;color:#1e40af} .status-waiting_for_approval,.status-waiting_for_client{background:#fed7aa;color:#9a3412}
.status-waiting_for_prompt{background:#e0e7ff;color:#3730a3} .status-completed{background:#d1fae5;color:#065f46}
.status-failed,.status-terminated,.status-timed_out{background:#fee2e2;color:#991b1b} .status-cancelled,.status-canceled{background:#e5e7eb;color:#374151}
.runhead{display:flex;gap:12px;align-items:center;flex-wrap:wrap} .runhead h2{margin:0;font-family:ui-monospace,monospace;font-size:14px}
.runhead .ui-link{margin-left:auto}
.approve-all{background:#fff7ed;border:1px solid #fdba74;border-radius:8px;padding:8px 12px;margin:8px 0}
.msg{background:#fff;border:1px solid #d8dde3;border-radius:6px;padding:10px 12px;margin:4px 0 10px}
.msg.user{border-left:4px solid #3b82f6;white-space:pre-wrap} .msg.assistant{border-left:4px solid #10b981}
.msg[data-streaming]{white-space:pre-wrap}
.md p{margin:0 0 8px} .md p:last-child{margin-bottom:0} .md .h{font-weight:700}
.md pre,details.tool pre{white-space:pre-wrap;word-break:break-word;margin:4px 0;background:#f3f4f6;padding:6px 8px;border-radius:4px}
.md code{background:#f3f4f6;padding:0 3px;border-radius:3px}
.step-meta{font-size:12px;margin-top:10px}
details.tool{background:#fff;border:1px solid #d8dde3;border-left:4px solid #f59e0b;border-radius:6px;margin:8px 0;padding:6px 10px}
details.tool.error{border-left-color:#dc2626} details.tool.waiting{border-color:#fb923c;background:#fffaf3}
details.tool summary{cursor:pointer} details.tool .preview{color:#4b5563}
details.tool .label{font-size:12px;color:#6b7280;margin-top:6px}
.approval{background:#fff7ed;border:1px solid #fdba74;border-radius:6px;padding:8px;margin:8px 0;display:flex;gap:6px;align-items:center;flex-wrap:wrap}
.approval .reason{flex:1;min-width:200px} .client-result .result-input{flex:1;min-width:240px;font:inherit}
.composer .actions{display:flex;gap:8px;margin-top:8px} .composer .why{margin:6px 0 0;font-size:13px}
`;
