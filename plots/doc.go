// Package plots draws result records: busBW (algBW, time, normalised
// busBW) against message size, one curve per configuration, with fitted
// models overlaid; two result sets compared with a ratio panel; and the
// winner map of a sweep with a tuning table's thresholds.
//
// More curves than a panel takes are split into small multiples by
// protocol or algorithm (facet.go); points carry their iterations' spread
// (spread.go); a comparison's ratio panel draws the ratios, verdicts and
// size-band thresholds of the caller's regression gate (ratio.go: tune
// plot runs package ci on the pairs PairSets makes). plots imports
// neither ci nor tuner, so perf, which draws through it, does not either.
//
// The package has two layers. The data layer (fields.go, curves.go,
// spread.go, facet.go, ticks.go, ratio.go, fit.go, winners.go, title.go)
// is pure: records in, points, labels, panels, ticks and bands out,
// unit-tested without drawing. The rendering layer (figure.go, layout.go,
// legend.go, axes.go, textfit.go, render_*.go, style.go, page.go) turns
// those into gonum/plot plots laid out on a page and writes PNG, SVG or
// PDF. gonum/plot embeds its fonts (Liberation), so rendering needs no
// installed fonts and no display.
package plots
