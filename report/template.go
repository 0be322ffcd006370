package report

import (
	"crypto/sha256"
	"encoding/base64"
	"html/template"
)

// sortScript sorts a table.sortable by the column header clicked (again:
// the other way): by each cell's data-v number where it has one (cells
// without sort first), else by its text. It is the page's only script.
const sortScript = `
document.querySelectorAll("table.sortable th").forEach(function (th) {
  th.tabIndex = 0;
  function sort() {
    var row = th.parentNode, table = row.closest("table"), body = table.tBodies[0];
    var col = Array.prototype.indexOf.call(row.children, th);
    var asc = th.getAttribute("aria-sort") !== "ascending";
    row.querySelectorAll("th").forEach(function (h) { h.removeAttribute("aria-sort"); });
    th.setAttribute("aria-sort", asc ? "ascending" : "descending");
    function key(tr) {
      var td = tr.cells[col];
      if (td.hasAttribute("data-v")) {
        var v = parseFloat(td.getAttribute("data-v"));
        return isNaN(v) ? -Infinity : v;
      }
      return td.textContent;
    }
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = key(a), y = key(b), c;
      if (typeof x === "number" && typeof y === "number") { c = x < y ? -1 : x > y ? 1 : 0; }
      else { c = String(x).localeCompare(String(y)); }
      return asc ? c : -c;
    });
    rows.forEach(function (r) { body.appendChild(r); });
  }
  th.addEventListener("click", sort);
  th.addEventListener("keydown", function (e) { if (e.key === "Enter") { sort(); } });
});
`

// scriptHash is the CSP source that allows sortScript and nothing else.
var scriptHash = func() string {
	h := sha256.Sum256([]byte(sortScript))
	return "'sha256-" + base64.StdEncoding.EncodeToString(h[:]) + "'"
}()

const css = `
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,"Liberation Sans",sans-serif;margin:1.5rem auto;max-width:1100px;padding:0 1rem;color:#1b1b1b;line-height:1.4}
h1{font-size:1.6rem;margin-bottom:.2rem}h2{font-size:1.25rem;margin-top:2rem;border-bottom:1px solid #ddd;padding-bottom:.2rem}h3{font-size:1rem;margin:1.2rem 0 .3rem;word-break:break-word}
.muted{color:#666;font-size:.9rem}
dl.meta{display:grid;grid-template-columns:max-content 1fr;gap:.15rem 1rem;font-size:.9rem}dl.meta dt{font-weight:600}dl.meta dd{margin:0;word-break:break-word}
table{border-collapse:collapse;font-size:.85rem;width:100%;margin:.5rem 0}
th,td{border-bottom:1px solid #e3e3e3;padding:.25rem .5rem;text-align:left;vertical-align:middle}
td.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}td.nw{white-space:nowrap}
table.sortable th{cursor:pointer;user-select:none;background:#f5f5f5;position:sticky;top:0}
th[aria-sort=ascending]::after{content:" ▲"}th[aria-sort=descending]::after{content:" ▼"}
.worse{color:#c01c28;font-weight:600}.better{color:#1a7f37;font-weight:600}.noisy{color:#9a6700}
.verdict{font-size:1.1rem;font-weight:700}
figure{margin:.5rem 0 1.5rem}figcaption{font-size:.85rem;color:#444}
svg{max-width:100%;height:auto;display:block}svg.spark{display:inline-block;vertical-align:middle}
.legend{display:flex;flex-wrap:wrap;gap:.2rem 1.2rem;font-size:.85rem;margin:.2rem 0}
.sw{display:inline-block;width:26px;border-top:3px solid;vertical-align:middle;margin-right:.35rem}
.c0{border-color:#0072b2}.c1{border-color:#d55e00}.c2{border-color:#009e73}.c3{border-color:#cc79a7}
.c4{border-color:#e69f00}.c5{border-color:#56b4e9}.c6{border-color:#000}.c7{border-color:#b8a900}
.d0{border-top-style:solid}.d1{border-top-style:dashed}.d2{border-top-style:dotted}
`

const pageHTML = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; img-src data:; style-src 'unsafe-inline'; script-src {{.ScriptHash}}">
<link rel="icon" href="data:,">
<title>{{.V.Title}}</title>
<style>` + css + `</style>
</head>
<body>
{{with .V}}<h1>{{.Title}}</h1>
{{if .Generated}}<p class="muted">Generated {{.Generated}}</p>{{end}}
{{if .Summary}}<p>{{.Summary}}</p>{{end}}
{{if or .Meta .Withheld}}<h2 id="metadata">Machine and commits</h2>
<dl class="meta">{{range .Meta}}<dt>{{.Name}}</dt><dd>{{.Value}}</dd>{{end}}</dl>
{{if .Withheld}}<p class="muted">{{.Withheld}} metadata entries left out: their names look like credentials.</p>{{end}}{{end}}
{{with .Gate}}<h2 id="gate">Gate</h2>
<p class="verdict {{if .Pass}}better{{else}}worse{{end}}">{{if .Pass}}pass{{else}}FAIL{{end}}{{if .Counts}}: {{.Counts}}{{end}}</p>
{{if or .Baseline .Candidate}}<p class="muted">{{if .Candidate}}candidate {{.Candidate}}{{end}}{{if and .Baseline .Candidate}} against {{end}}{{if .Baseline}}baseline {{.Baseline}}{{end}}</p>{{end}}
<table class="sortable" id="gate-table"><thead><tr><th>key</th><th>baseline{{if .Unit}} ({{.Unit}}){{end}}</th><th>candidate</th><th>change</th><th>p-value</th><th>verdict</th></tr></thead>
<tbody>{{range .Rows}}<tr><td>{{.Key}}</td><td class="n" data-v="{{.Base.Sort}}">{{.Base.Text}}</td><td class="n" data-v="{{.Cand.Sort}}">{{.Cand.Text}}</td><td class="n {{.VerdictClass}}" data-v="{{.Change.Sort}}">{{.Change.Text}}</td><td class="n" data-v="{{.P.Sort}}">{{.P.Text}}</td><td class="{{.VerdictClass}}">{{.Verdict}}</td></tr>
{{end}}</tbody></table>{{end}}
{{if .Changes}}<h2 id="changes">Change points</h2>
<table class="sortable" id="change-table"><thead><tr><th>key</th><th>runs</th><th>commits</th><th>when</th><th>before</th><th>after</th><th>change</th><th>p-value</th></tr></thead>
<tbody>{{range .Changes}}<tr><td>{{if .Anchor}}<a href="#{{.Anchor}}">{{.Key}}</a>{{else}}{{.Key}}{{end}}</td><td class="n" data-v="{{.RunSort}}">{{.Runs}}</td><td class="nw">{{.Commits}}</td><td class="nw">{{.When}}</td><td class="n" data-v="{{.Before.Sort}}">{{.Before.Text}}</td><td class="n" data-v="{{.After.Sort}}">{{.After.Text}}</td><td class="n {{.Class}}" data-v="{{.Change.Sort}}">{{.Change.Text}}</td><td class="n" data-v="{{.P.Sort}}">{{.P.Text}}</td></tr>
{{end}}</tbody></table>{{end}}
{{if .Charts}}<h2 id="series">Series</h2>
<p class="muted">{{.ChartNote}}</p>
{{range .Charts}}<figure id="{{.Anchor}}"><h3>{{.Key}}</h3>{{.SVG}}<figcaption>{{.Caption}}</figcaption></figure>
{{end}}{{end}}
{{if .Curves}}<h2 id="curves">Curves</h2>
{{range .Curves}}<figure><h3>{{.Title}}</h3>{{.SVG}}<figcaption class="legend">{{range .Legend}}<span><span class="sw {{.Class}}"></span>{{.Name}}</span>{{end}}</figcaption></figure>
{{end}}{{end}}
{{if .Keys}}<h2 id="keys">Keys</h2>
<p class="muted">Every key: its runs, newest value, median over the runs, change points (red: worse, green: better) and largest change. Click a heading to sort.</p>
<table class="sortable" id="key-table"><thead><tr><th>key</th><th>runs</th><th>newest</th><th>median</th><th>change points</th><th>largest change</th><th>series</th></tr></thead>
<tbody>{{range .Keys}}<tr><td>{{if .Anchor}}<a href="#{{.Anchor}}">{{.Key}}</a>{{else}}{{.Key}}{{end}}</td><td class="n" data-v="{{.Runs.Sort}}">{{.Runs.Text}}</td><td class="n" data-v="{{.Latest.Sort}}">{{.Latest.Text}}</td><td class="n" data-v="{{.Median.Sort}}">{{.Median.Text}}</td><td class="n" data-v="{{.NChanges}}">{{.NChanges}}</td><td class="n" data-v="{{.Largest.Sort}}">{{.Largest.Text}}</td><td>{{.Spark}}</td></tr>
{{end}}</tbody></table>{{end}}
{{end}}<script>` + sortScript + `</script>
</body>
</html>
`

var pageTemplate = template.Must(template.New("report").Parse(pageHTML))

// pageData is the template's root: the view and the CSP's script hash.
type pageData struct {
	V          *view
	ScriptHash string
}
