package plots

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
)

// synthTimeline is rows of a ring: each row a span, alternating send and
// recv steps, a wait in every recv, and a critical path down the rows.
func synthTimeline(rows int) Timeline {
	tl := Timeline{Title: "allreduce seq 3: 4 ranks x 2 channels", Subtitle: "1M, Ring/Simple"}
	for r := 0; r < rows; r++ {
		row := TimelineRow{Label: fmt.Sprintf("r%d ch %d", r/2, r%2)}
		off := float64(r)
		row.Bars = append(row.Bars, TimelineBar{Start: off, End: 100 + off, Layer: LayerSpan})
		for k := 0; k < 6; k++ {
			s := off + float64(k)*15
			kind := "send"
			if k%2 == 1 {
				kind = "recvReduceSend"
				row.Bars = append(row.Bars, TimelineBar{Start: s, End: s + 6, Layer: LayerWait})
			}
			row.Bars = append(row.Bars, TimelineBar{Start: s, End: s + 12, Layer: LayerStep, Kind: kind})
		}
		tl.Rows = append(tl.Rows, row)
		tl.Path = append(tl.Path, TimelineMark{Row: r, Start: off, End: off + 10})
	}
	return tl
}

// A timeline draws in PNG (the page's size, not blank, the step colours,
// the waits' and spans' fills present) and SVG.
func TestTimelineFigure(t *testing.T) {
	tl := synthTimeline(8)
	fig, err := TimelineFigure(tl)
	if err != nil {
		t.Fatal(err)
	}
	kinds := stepKinds(tl)
	if strings.Join(kinds, ",") != "recvReduceSend,send" {
		t.Errorf("kinds %v", kinds)
	}
	var legend []string
	for _, e := range fig.legend {
		legend = append(legend, e.name)
	}
	if got := strings.Join(legend, "|"); got != "recvReduceSend|send|wait|operation on the track|critical path" {
		t.Errorf("legend %q", got)
	}
	checkPNG(t, render(t, fig, "png", small), small, StepColor(kinds, "send"), StepColor(kinds, "recvReduceSend"), waitFill, spanFill)
	checkSVG(t, render(t, fig, "svg", small), "360pt")
	// Many rows: still draws, the labels thinned.
	fig, err = TimelineFigure(synthTimeline(128))
	if err != nil {
		t.Fatal(err)
	}
	checkPNG(t, render(t, fig, "png", small), small, StepColor(kinds, "send"))
}

func TestTimelineRefusesBadInput(t *testing.T) {
	if _, err := TimelineFigure(Timeline{}); !errors.Is(err, ErrNoPoints) {
		t.Errorf("no rows: %v", err)
	}
	tl := synthTimeline(2)
	tl.Rows[1].Bars[0].End = math.NaN()
	if _, err := TimelineFigure(tl); err == nil || !strings.Contains(err.Error(), "finite") {
		t.Errorf("a NaN bar: %v", err)
	}
	tl = synthTimeline(2)
	tl.Path = append(tl.Path, TimelineMark{Row: 5})
	if _, err := TimelineFigure(tl); err == nil || !strings.Contains(err.Error(), "rows 0 to 1") {
		t.Errorf("a mark off the rows: %v", err)
	}
}
