package plots

import (
	"sort"
	"strings"
)

// maxCurvesPerPanel is the most curves one panel holds before a figure
// is split into small multiples: past it, colours and markers run out
// and lines tangle.
const maxCurvesPerPanel = 8

// facetFields are the fields a figure may be split by, in order of
// preference, and their names in panel titles.
var facetFields = []Field{FieldProto, FieldAlgo}

var facetNames = map[Field]string{FieldProto: "protocol", FieldAlgo: "algorithm"}

// Facets is how the curves of a figure fall into panels.
type Facets struct {
	// By are the fields the panels split by; nil: one panel.
	By []Field
	// Panels lists the curves of each panel (indices), in panel order.
	Panels [][]int
	// Titles name each panel's values of By: "protocol LL"; "" for one
	// panel.
	Titles []string
	// Labels name each curve within its panel, by the fields that differ
	// other than By; Styles give each curve its colour and marker, one
	// per label, so a configuration looks the same in every panel.
	Labels []string
	Styles []int
}

// PlanFacets splits curves into panels when there are more than
// maxCurvesPerPanel of them: by protocol or algorithm, whichever leaves
// the fewest curves in the fullest panel, and by both when one alone
// leaves more than maxCurvesPerPanel. by are the grouping fields the
// curves were built with.
func PlanFacets(by []Field, curves []Curve) Facets {
	f := Facets{Panels: [][]int{make([]int, len(curves))}, Titles: []string{""}}
	for i := range curves {
		f.Panels[0][i] = i
		f.Labels = append(f.Labels, curves[i].Label)
		f.Styles = append(f.Styles, i)
	}
	if len(curves) <= maxCurvesPerPanel {
		return f
	}
	var varying []Field
	for _, fld := range facetFields {
		if k := fieldIndex(by, fld); k >= 0 && distinctAt(curves, k) > 1 {
			varying = append(varying, fld)
		}
	}
	if len(varying) == 0 {
		return f
	}
	best, bestMax := []Field(nil), len(curves)+1
	for _, fld := range varying {
		if m := fullest(by, curves, []Field{fld}); m < bestMax {
			best, bestMax = []Field{fld}, m
		}
	}
	if bestMax > maxCurvesPerPanel && len(varying) > 1 {
		best = varying
	}
	return splitBy(by, curves, best)
}

// splitBy makes the panels of the fields' values, sorted as the values
// sort, and labels the curves within them.
func splitBy(by []Field, curves []Curve, fields []Field) Facets {
	idx := make([]int, len(fields))
	for j, fld := range fields {
		idx[j] = fieldIndex(by, fld)
	}
	keyOf := func(c Curve) []string {
		k := make([]string, len(idx))
		for j, i := range idx {
			k[j] = c.Group[i]
		}
		return k
	}
	panels := map[string][]int{}
	var keys [][]string
	for i, c := range curves {
		k := keyOf(c)
		id := strings.Join(k, "\x00")
		if _, ok := panels[id]; !ok {
			keys = append(keys, k)
		}
		panels[id] = append(panels[id], i)
	}
	sort.SliceStable(keys, func(a, b int) bool {
		for j, fld := range fields {
			if keys[a][j] != keys[b][j] {
				return valueLess(fld, keys[a][j], keys[b][j])
			}
		}
		return false
	})
	out := Facets{By: fields}
	for _, k := range keys {
		out.Panels = append(out.Panels, panels[strings.Join(k, "\x00")])
		var parts []string
		for j, fld := range fields {
			parts = append(parts, facetNames[fld]+" "+k[j])
		}
		out.Titles = append(out.Titles, strings.Join(parts, ", "))
	}

	// Within a panel, the facet fields go unsaid.
	show := make([]bool, len(by))
	shown := false
	for k := range by {
		show[k] = distinctAt(curves, k) > 1 && fieldIndex(fields, by[k]) < 0
		shown = shown || show[k]
	}
	styles := map[string]int{}
	for _, c := range curves {
		l := c.Label
		if shown {
			l = label(by, c.Group, show)
		}
		if _, ok := styles[l]; !ok {
			styles[l] = len(styles)
		}
		out.Labels = append(out.Labels, l)
		out.Styles = append(out.Styles, styles[l])
	}
	return out
}

// fullest is the most curves a panel holds when split by fields.
func fullest(by []Field, curves []Curve, fields []Field) int {
	n := 0
	for _, p := range splitBy(by, curves, fields).Panels {
		n = max(n, len(p))
	}
	return n
}

func fieldIndex(by []Field, f Field) int {
	for k, b := range by {
		if b == f {
			return k
		}
	}
	return -1
}

// distinctAt counts the distinct values of group field k.
func distinctAt(curves []Curve, k int) int {
	seen := map[string]bool{}
	for _, c := range curves {
		seen[c.Group[k]] = true
	}
	return len(seen)
}
