// Package report renders one self-contained HTML page about a results
// history: the busBW curves of each collective, each key's series over the
// runs with its change points marked, the regression gate's table, and the
// machine and commit metadata.
//
// Its input is plain data (Page): numbers, labels and the change points a
// caller found; it reads no files and imports none of the stack. The page
// works offline and makes no request: no script, style or font from
// anywhere, a Content-Security-Policy that forbids loading any (default-src
// 'none'), charts as inline SVG drawn with gonum/plot (fonts named, not
// embedded: a browser falls back to its sans-serif), one small inline
// script, allowed by its hash, that sorts the tables.
//
// Scale: every key gets a row of the keys table with a sparkline (its
// series, its change points as red or green ticks); at most Page.Charts
// keys (DefaultCharts) are drawn in full, axes, medians and change
// percentages on them: the keys with change points first, by their
// largest change, then the keys whose newest run lies farthest from the
// median of the runs before it (a key that did not move is not drawn).
// Every change point of every key is listed in one table, regressions
// first. 200 keys of 100 runs make a page of 0.7 MB in about 0.1 s.
//
// Every text is escaped (html/template); the SVGs' text is escaped by
// gonum/plot's SVG canvas. Metadata entries whose name, or a NAME=value
// inside their value, looks like a credential (results.SecretName) are
// left out, and the page says how many were.
package report
