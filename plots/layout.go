package plots

import (
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// A figure's panels lie in a grid of cells, each cell a stack of panels
// (a curves panel over its ratio panel, say) with the same weights in
// every cell. The layout gives every cell's data areas one width and the
// same heights, whatever their axes' labels take, so that a size or a
// value lies at one place in every panel of a column or a row.

// Gaps between cells and between the panels of a cell, in points.
const (
	cellGapX = 12
	cellGapY = 10
)

// targetAspect is the width over height of a panel's data area that the
// choice of columns aims at.
const targetAspect = 1.35

// gridColumns chooses the columns for the cells in a w x h area: the
// count whose largest panels come nearest targetAspect.
func gridColumns(cells [][]panel, w, h vg.Length) int {
	n := len(cells)
	weights := cellWeights(cells)
	sum, most := 0.0, 0.0
	for _, x := range weights {
		sum, most = sum+x, math.Max(most, x)
	}
	target := targetAspect * most / sum // of the whole cell
	best, bestD := 1, math.Inf(1)
	for cols := 1; cols <= n; cols++ {
		rows := (n + cols - 1) / cols
		asp := float64(w) / float64(cols) / (float64(h) / float64(rows))
		if d := math.Abs(math.Log(asp / target)); d < bestD-1e-9 {
			best, bestD = cols, d
		}
	}
	return best
}

// insets are how far a panel's data area lies inside its canvas.
type insets struct{ l, r, t, b vg.Length }

func measure(p *plot.Plot, c draw.Canvas) insets {
	d := p.DataCanvas(c)
	return insets{l: d.Min.X - c.Min.X, r: c.Max.X - d.Max.X, t: c.Max.Y - d.Max.Y, b: d.Min.Y - c.Min.Y}
}

// gridLayout is where every panel's canvas goes, and the axis titles.
type gridLayout struct {
	dataW    vg.Length
	dataH    []vg.Length // per panel of a cell
	canvases [][]draw.Canvas
	titles   []axisTitle
}

// axisTitle is an axis title, drawn by the figure rather than by gonum:
// gonum shrinks a panel's data area until its axis titles fit along it,
// to nothing in a small panel; the figure shrinks or cuts the title
// short instead.
type axisTitle struct {
	text     string
	vertical bool      // a y title, written upwards
	at       vg.Point  // y: the left of its strip and the data's middle; x: the data's middle and the top of its strip
	lo, hi   vg.Length // the extent it may take along its axis
}

// titleRoom is the depth of the strip an axis title takes.
func titleRoom() vg.Length {
	s := textStyle(sans, axisSize, color.Black)
	return s.Height("M") + s.FontExtents().Descent + 3
}

// measureSide is the side of the canvas insets are measured on: large,
// so that gonum's padding for the markers at the axis' ends is what it is
// on a page, and a small panel's measure does not collapse.
const measureSide = 2000

// layoutCells places the cells in c, in cols columns (0: gridColumns).
// Axis titles go on the outer panels only: the y title on the first
// column, the x title under the lowest cell of each column. A panel's
// insets depend on its ticks, fitted to its data area, so the layout is
// done twice.
func layoutCells(c draw.Canvas, cells [][]panel, cols int) gridLayout {
	n := len(cells)
	W, H := c.Max.X-c.Min.X, c.Max.Y-c.Min.Y
	switch {
	case n == 1:
		cols = 1
	case cols <= 0:
		cols = gridColumns(cells, W, H)
	}
	rows := (n + cols - 1) / cols
	weights := cellWeights(cells)
	sumW := 0.0
	for _, w := range weights {
		sumW += w
	}
	for i, cell := range cells {
		lowest := i+cols >= n // no cell under this one
		for k := range cell {
			pn := &cell[k]
			pn.p.Y.Label.Text, pn.p.X.Label.Text = "", "" // drawn by the figure: axisTitle
			pn.xTitled = lowest && k == len(cell)-1 && pn.xLabel != ""
		}
	}

	// First guess: the cells share the area evenly.
	g := gridLayout{dataW: 0.8 * W / vg.Length(cols), dataH: make([]vg.Length, len(weights))}
	for k, w := range weights {
		g.dataH[k] = 0.7 * H / vg.Length(rows) * vg.Length(w/sumW)
	}
	for pass := 0; pass < 2; pass++ {
		for _, cell := range cells {
			for k, pn := range cell {
				if pn.fit != nil {
					pn.fit(g.dataW, g.dataH[k])
				}
			}
		}
		g = place(c, cells, cols, rows, weights, sumW)
	}
	// A panel title wider than its panel is cut short.
	for i, cell := range cells {
		for k, pn := range cell {
			if pn.title != "" {
				cv := g.canvases[i][k]
				pn.p.Title.Text = elide(pn.p.Title.TextStyle, pn.title, cv.Max.X-cv.Min.X)
			}
		}
	}
	return g
}

// place lays the cells out from their panels' insets.
func place(c draw.Canvas, cells [][]panel, cols, rows int, weights []float64, sumW float64) gridLayout {
	K := len(weights)
	ins := make([][]insets, len(cells))
	colL, colR := make([]vg.Length, cols), make([]vg.Length, cols)
	rowT, rowB := make([][]vg.Length, rows), make([][]vg.Length, rows)
	for r := range rowT {
		rowT[r], rowB[r] = make([]vg.Length, K), make([]vg.Length, K)
	}
	for i, cell := range cells {
		col, row := i%cols, i/cols
		ins[i] = make([]insets, len(cell))
		for k, pn := range cell {
			big := c
			big.Max.X, big.Max.Y = c.Min.X+measureSide, c.Min.Y+measureSide
			in := measure(pn.p, big)
			ins[i][k] = in
			colL[col], colR[col] = max(colL[col], in.l), max(colR[col], in.r)
			rowT[row][k], rowB[row][k] = max(rowT[row][k], in.t), max(rowB[row][k], in.b)
		}
	}
	for i := 0; i < len(cells); i += cols {
		if hasYLabel(cells[i]) {
			colL[0] += titleRoom()
			break
		}
	}
	titled := make([]bool, rows) // a row with an x title under it
	for i, cell := range cells {
		titled[i/cols] = titled[i/cols] || cell[len(cell)-1].xTitled
	}
	for r, t := range titled {
		if t {
			rowB[r][K-1] += titleRoom()
		}
	}
	W, H := c.Max.X-c.Min.X, c.Max.Y-c.Min.Y
	fixedW := vg.Length(cols-1) * cellGapX
	for i := range colL {
		fixedW += colL[i] + colR[i]
	}
	fixedH := vg.Length(rows-1)*cellGapY + vg.Length(rows*(K-1))*panelGap
	for r := range rowT {
		for k := range rowT[r] {
			fixedH += rowT[r][k] + rowB[r][k]
		}
	}
	g := gridLayout{dataW: max(1, (W-fixedW)/vg.Length(cols)), dataH: make([]vg.Length, K)}
	for k, w := range weights {
		g.dataH[k] = max(1, (H-fixedH)/vg.Length(rows)*vg.Length(w/sumW))
	}

	// Data areas at fixed places; each canvas reaches out from its data
	// area by its own insets.
	dataX := make([]vg.Length, cols)
	x := c.Min.X
	for col := range dataX {
		dataX[col] = x + colL[col]
		x = dataX[col] + g.dataW + colR[col] + cellGapX
	}
	dataTop := make([][]vg.Length, rows)
	y := c.Max.Y
	for r := range dataTop {
		dataTop[r] = make([]vg.Length, K)
		for k := range dataTop[r] {
			dataTop[r][k] = y - rowT[r][k]
			y = dataTop[r][k] - g.dataH[k] - rowB[r][k] - panelGap
		}
		y += panelGap - cellGapY
	}
	g.canvases = make([][]draw.Canvas, len(cells))
	for i, cell := range cells {
		col, row := i%cols, i/cols
		g.canvases[i] = make([]draw.Canvas, len(cell))
		for k := range cell {
			in := ins[i][k]
			cv := c
			cv.Min.X, cv.Max.X = dataX[col]-in.l, dataX[col]+g.dataW+in.r
			cv.Max.Y, cv.Min.Y = dataTop[row][k]+in.t, dataTop[row][k]-g.dataH[k]-in.b
			g.canvases[i][k] = cv
			bottom := dataTop[row][k] - g.dataH[k]
			if col == 0 && cell[k].yLabel != "" {
				// Up the data area, and into the panel title's room above it.
				g.titles = append(g.titles, axisTitle{text: cell[k].yLabel, vertical: true,
					at: vg.Point{X: c.Min.X, Y: bottom + g.dataH[k]/2}, lo: bottom, hi: cv.Max.Y})
			}
			if cell[k].xTitled {
				g.titles = append(g.titles, axisTitle{text: cell[k].xLabel,
					at: vg.Point{X: dataX[col] + g.dataW/2, Y: cv.Min.Y}, lo: cv.Min.X, hi: cv.Max.X})
			}
		}
	}
	return g
}

func hasYLabel(cell []panel) bool {
	for _, pn := range cell {
		if pn.yLabel != "" {
			return true
		}
	}
	return false
}

// cellWeights are the panel weights of a cell (the first; all cells of a
// figure are stacked alike).
func cellWeights(cells [][]panel) []float64 {
	var w []float64
	for _, pn := range cells[0] {
		w = append(w, pn.weight)
	}
	return w
}
