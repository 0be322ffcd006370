package plots

import (
	"bytes"
	"image/color"
	"image/png"
	"math"
	"strings"
	"testing"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

func canvasOf(pg Page) draw.Canvas {
	return draw.New(vgimg.NewWith(vgimg.UseWH(pg.Width, pg.Height), vgimg.UseDPI(pg.DPI)))
}

// A title or subtitle too long for the page wraps, shrinks, and as a last
// resort is cut short: no line is wider than the page.
func TestHeadingsFit(t *testing.T) {
	tiny := Page{Width: 3 * vg.Inch, Height: 2.5 * vg.Inch, DPI: 100}
	width := tiny.Width - 2*margin
	fig := &Figure{Title: "busBW: h200x2_all_reduce_simple.txt vs h200x2_all_reduce_perf.txt",
		Subtitle: "busBW against message size, out-of-place; allreduce, 2 ranks, vm (nccl-tests); ratio: candidate/baseline of tune gate's medians"}
	hs := fig.headings(width)
	if len(hs) != 2 {
		t.Fatalf("%d headings", len(hs))
	}
	for i, want := range []string{fig.Title, fig.Subtitle} {
		h := hs[i]
		if len(h.lines) > 2 {
			t.Errorf("%q in %d lines", want, len(h.lines))
		}
		for _, l := range h.lines {
			if w := h.style.Width(l); w > width {
				t.Errorf("line %q is %v wide on a page %v wide", l, w, width)
			}
		}
		if got := strings.Join(h.lines, " "); i == 0 && got != want {
			t.Errorf("title set as %q, want every word of %q", got, want)
		}
	}
	long := &Figure{Title: strings.Repeat("allreduce_perf_with_a_long_name ", 20)}
	h := long.headings(width)[0]
	if len(h.lines) != 2 || !strings.HasSuffix(h.lines[1], ellipsis) || h.style.Width(h.lines[1]) > width {
		t.Errorf("a title that cannot fit: %q", h.lines)
	}

	// Drawn, the title leaves the page's margins clear.
	fig.addPanel(panel{p: newPlot(), weight: 1})
	img, err := png.Decode(bytes.NewReader(render(t, fig, "png", tiny)))
	if err != nil {
		t.Fatal(err)
	}
	m := int(float64(margin)/72*float64(tiny.DPI)) - 1
	b := img.Bounds()
	for y := 0; y < b.Max.Y/3; y++ {
		for _, x := range []int{0, m / 2, m, b.Max.X - 1 - m, b.Max.X - 1 - m/2, b.Max.X - 1} {
			if c := color.RGBAModel.Convert(img.At(x, y)).(color.RGBA); c != (color.RGBA{255, 255, 255, 255}) {
				t.Fatalf("ink at (%d, %d) in the margin: the title runs off the page", x, y)
			}
		}
	}
}

// A size axis labels as many ticks as its width holds apart.
func TestSizeTicksFit(t *testing.T) {
	for _, w := range []vg.Length{60, 120, 250, 600} {
		p := newPlot()
		fit := setSizeAxis(p, 3, 30, true)
		fit(w)
		var xs []float64
		var widest vg.Length
		for _, tk := range p.X.Tick.Marker.Ticks(p.X.Min, p.X.Max) {
			if tk.Label != "" {
				xs = append(xs, tk.Value)
				widest = max(widest, p.X.Tick.Label.Width(tk.Label))
			}
		}
		if len(xs) < 2 {
			t.Errorf("%v wide: %d labels", w, len(xs))
			continue
		}
		gap := vg.Length((xs[1]-xs[0])/(p.X.Max-p.X.Min)) * w
		if gap < widest {
			t.Errorf("%v wide: labels %v apart, %v wide: they overlap", w, gap, widest)
		}
		if w == 600 && len(xs) < 6 {
			t.Errorf("600 pt wide: only %d labels", len(xs))
		}
	}
}

// Small multiples: every panel's data area has one size, the panels of a
// column line up, and the legend, in the grid's empty cell, covers none.
func TestGridLayout(t *testing.T) {
	fig, err := CurvesFigure(configs([]string{"Ring", "Tree"}, []string{"LL", "LL128", "Simple"}, []int{1, 2}), Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := canvasOf(DefaultPage)
	l, slot, cols, ok := fig.legendSlot(c)
	if !ok || cols != 2 || len(l.entries) != len(fig.legend) {
		t.Fatalf("legend slot: %v, %d columns", ok, cols)
	}
	g := layoutCells(c, fig.cells, cols)
	var w, h vg.Length
	colX := map[int]vg.Length{}
	for i, cell := range fig.cells {
		cv := g.canvases[i][0]
		d := cell[0].p.DataCanvas(cv)
		dw, dh := d.Max.X-d.Min.X, d.Max.Y-d.Min.Y
		if i == 0 {
			w, h = dw, dh
		}
		if math.Abs(float64(dw-w)) > 1 || math.Abs(float64(dh-h)) > 1 {
			t.Errorf("panel %d: data %v x %v, panel 0's %v x %v", i, dw, dh, w, h)
		}
		if x, ok := colX[i%cols]; ok && math.Abs(float64(x-d.Min.X)) > 1 {
			t.Errorf("panel %d starts at %v, its column at %v", i, d.Min.X, x)
		}
		colX[i%cols] = d.Min.X
		if dw < 100 || dh < 60 {
			t.Errorf("panel %d: data %v x %v on an 8x5 page", i, dw, dh)
		}
		if overlaps(cv.Rectangle, vg.Rectangle{Min: slot.Min, Max: vg.Point{X: slot.Max.X, Y: slot.Min.Y + vg.Length(l.rows)*l.entryH}}) {
			t.Errorf("the legend covers panel %d", i)
		}
	}
	// Axis titles: the y title on the first column, x under each column.
	var ys, xs int
	for _, at := range g.titles {
		if at.vertical {
			ys++
		} else {
			xs++
		}
	}
	if ys != 2 || xs != 2 {
		t.Errorf("%d y titles and %d x titles, want 2 and 2", ys, xs)
	}
}

func overlaps(a, b vg.Rectangle) bool {
	return a.Min.X < b.Max.X && b.Min.X < a.Max.X && a.Min.Y < b.Max.Y && b.Min.Y < a.Max.Y
}
