package perf

import (
	"io"
	"time"

	pprogress "github.com/jedib0t/go-pretty/v6/progress"
)

// progress shows sizes done, elapsed time and ETA on a terminal; nothing
// when stderr is not one (a pipe, a file, CI).
type progress struct {
	pw      pprogress.Writer
	tracker *pprogress.Tracker
}

func newProgress(w io.Writer, total int) *progress {
	if !isTerminal(w) || total <= 0 {
		return &progress{}
	}
	pw := pprogress.NewWriter()
	pw.SetOutputWriter(w)
	pw.SetAutoStop(false)
	pw.SetTrackerPosition(pprogress.PositionRight)
	pw.SetUpdateFrequency(200 * time.Millisecond)
	pw.Style().Visibility.ETA = true
	pw.Style().Options.ETAPrecision = 100 * time.Millisecond
	pw.Style().Visibility.Time = true
	pw.Style().Visibility.Value = true
	t := &pprogress.Tracker{Message: "sizes", Total: int64(total), Units: pprogress.UnitsDefault}
	pw.AppendTracker(t)
	go pw.Render()
	return &progress{pw: pw, tracker: t}
}

func (p *progress) step() {
	if p.tracker != nil {
		p.tracker.Increment(1)
	}
}

func (p *progress) done() {
	if p.pw != nil {
		p.tracker.MarkAsDone()
		time.Sleep(250 * time.Millisecond) // let the last frame render
		p.pw.Stop()
	}
}
