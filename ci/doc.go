// Package ci is the regression gate: it compares a candidate result set with
// a baseline, key by key, and says which keys got slower beyond a threshold
// with statistical significance.
//
// The method is benchstat's (golang.org/x/perf/benchmath): per side, the
// median of the repeated samples of a key and its confidence interval; a
// Mann-Whitney U test for whether the two sides differ; a bootstrap
// confidence interval for the ratio of the medians. A key regresses only when
// its change is beyond the threshold of its size band AND significant. Where a
// side has no repeats (or too few for the test ever to reach significance) the
// gate falls back to the plain ratio against the threshold and says so.
//
// The core (Compare) is pure: records in, a Report out. Writers for the
// terminal table, Markdown, JUnit XML and JSON are thin functions of a Report.
package ci
