// Package plots draws result records: busBW (algBW, time, normalised
// busBW) against message size, one curve per configuration, with fitted
// models overlaid; two result sets compared with a ratio panel; and the
// winner map of a sweep with a tuning table's thresholds.
//
// The package has two layers. The data layer (fields.go, curves.go,
// ticks.go, ratio.go, fit.go, winners.go, title.go) is pure: records in,
// points, labels, ticks and bands out, unit-tested without drawing. The
// rendering layer (figure.go, render_*.go, style.go, page.go) turns those
// into gonum/plot plots and writes PNG, SVG or PDF. gonum/plot embeds its
// fonts (Liberation), so rendering needs no installed fonts and no display.
package plots
