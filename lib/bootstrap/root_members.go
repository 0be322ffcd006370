// root_members.go: the job's membership: admitting processes, the join
// timeout, the heartbeat, and a process's leaving or the job's failure.

package bootstrap

import (
	"cmp"
	"fmt"
	"io"
	"os"
	"slices"
	"time"
)

// admit registers a joining process; it returns why not ("" when
// admitted). The last rank to join sends everyone the table.
func (r *Root) admit(m *member, nranks int) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.closed:
		return "the root is closed"
	case r.failed != "":
		return "the job already failed: " + r.failed
	case r.procs != nil:
		return "every rank has joined already"
	case r.nranks != 0 && nranks != r.nranks:
		return fmt.Sprintf("this process says %d ranks, the job %d", nranks, r.nranks)
	}
	seen := map[int]bool{}
	for _, rk := range m.info.Ranks {
		if o := r.claimed[rk]; o != nil || seen[rk] {
			return fmt.Sprintf("rank %d is claimed twice (also by pid %d)", rk, pidOf(o, m))
		}
		seen[rk] = true
	}
	r.nranks = nranks
	for _, rk := range m.info.Ranks {
		r.claimed[rk] = m
	}
	r.members = append(r.members, m)
	if len(r.claimed) < r.nranks {
		// A process gives up waiting at its own timeout (twice the
		// heartbeat it asks for; Join): the root answers by the earliest,
		// naming the ranks that never came, rather than let a process
		// give up and the job fail naming that one instead.
		if within := 2 * m.heartbeat; within > 0 {
			if by := time.Now().Add(within); by.Before(r.joinBy) {
				r.joinBy, r.joinWithin = by, within
				r.timer.Reset(within)
			}
		}
		return ""
	}
	r.timer.Stop()
	r.procs = slices.Clone(r.members)
	slices.SortFunc(r.procs, func(a, b *member) int { return slices.Min(a.info.Ranks) - slices.Min(b.info.Ranks) })
	infos := make([]ProcInfo, len(r.procs))
	self, ours := r.self, 0
	for i, p := range r.procs {
		p.index = i
		infos[i] = p.info
		if p.process == thisProcess {
			self.index, ours = i, ours+1
		}
	}
	if ours > 1 {
		self.index = -1 // several joins from this process (tests): none is the root's own
	}
	for i, p := range r.procs {
		r.wg.Add(1)
		go func() { // not under mu: a slow reader must not hold up the root
			defer r.wg.Done()
			p.send(frameTable, encodeTable(i, self, infos))
		}()
	}
	if limit := heartbeatLimit(r.procs); limit > 0 {
		r.wg.Add(1)
		go r.heartbeat(slices.Clone(r.procs), limit)
	}
	return ""
}

// heartbeatLimit is the smallest silence the processes tolerate (0: none
// asked for one).
func heartbeatLimit(ms []*member) time.Duration {
	var limit time.Duration
	for _, m := range ms {
		if m.heartbeat > 0 && (limit == 0 || m.heartbeat < limit) {
			limit = m.heartbeat
		}
	}
	return limit
}

// heartbeat pings every process each limit/4 and fails the job, naming
// the process, when one was silent for limit: a host cut off or stopped
// says nothing, and TCP alone would not notice for minutes. It stops when
// the job ends.
func (r *Root) heartbeat(ms []*member, limit time.Duration) {
	defer r.wg.Done()
	tick := time.NewTicker(limit / 4)
	defer tick.Stop()
	for {
		select {
		case <-r.left:
			return
		case <-r.stop:
			return
		case <-tick.C:
		}
		now := time.Now()
		for _, m := range ms {
			r.mu.Lock()
			quiet := m.bye || m.gone
			r.mu.Unlock()
			if quiet {
				continue
			}
			if silent := now.Sub(time.Unix(0, m.heard.Load())); silent > limit {
				r.fail(fmt.Sprintf("lost the %v: no answer for %v (its host unreachable, or the process stopped)", m.info, silent.Round(time.Millisecond)))
				return
			}
			go m.ping(limit / 4)
		}
	}
}

// ping sends m a ping, giving up after d (a full socket buffer on a dead
// link must not hold the heartbeat).
func (m *member) ping(d time.Duration) {
	if !m.wmu.TryLock() {
		return // a write is under way: the link is busy, not silent
	}
	defer m.wmu.Unlock()
	_ = m.conn.SetWriteDeadline(time.Now().Add(d))
	_ = writeFrame(m.conn, framePing, nil)
}

func pidOf(o, m *member) int {
	if o != nil {
		return o.info.Pid
	}
	return m.info.Pid
}

// joinTimedOut fails a job whose ranks did not all join in time.
func (r *Root) joinTimedOut() {
	r.mu.Lock()
	if r.procs != nil || r.closed {
		r.mu.Unlock()
		return
	}
	var missing []int
	for rk := 0; rk < max(r.nranks, 1); rk++ {
		if r.claimed[rk] == nil {
			missing = append(missing, rk)
		}
	}
	reason := fmt.Sprintf("rank%s %s never joined within %v", plural(len(missing)), joinInts(missing), r.joinWithin)
	if r.nranks == 0 {
		reason = fmt.Sprintf("no process joined within %v", r.joinWithin)
	}
	r.failed = reason
	members := slices.Clone(r.members)
	r.mu.Unlock()
	for _, m := range members {
		m.send(frameRefuse, encodeStr(reason))
		m.conn.Close()
	}
	r.mu.Lock()
	r.told = true
	r.checkLeft()
	r.mu.Unlock()
}

// disconnected handles a connection that ended: expected after goodbye,
// the job lost otherwise.
func (r *Root) disconnected(m *member, err error) {
	r.mu.Lock()
	m.gone = true
	// A root closing ends every connection itself: that loses no process.
	bye, failed, closed := m.bye, r.failed != "", r.closed
	r.checkLeft()
	r.mu.Unlock()
	m.conn.Close()
	if !bye && !failed && !closed {
		why := "connection closed"
		if err != io.EOF {
			why = err.Error()
		}
		r.fail(fmt.Sprintf("lost the %v: %s", m.info, why))
	}
}

// fail marks the job failed and tells every process still connected.
func (r *Root) fail(reason string) {
	r.mu.Lock()
	if r.failed != "" {
		r.mu.Unlock()
		return
	}
	r.failed = reason
	members := slices.Clone(r.members)
	r.mu.Unlock()
	// The root's own process last: told, it may exit at once, taking the
	// root with it before the others heard why.
	self := os.Getpid()
	slices.SortStableFunc(members, func(a, b *member) int {
		return cmp.Compare(boolInt(a.info.Pid == self), boolInt(b.info.Pid == self))
	})
	msg := encodeStr(reason)
	for _, m := range members {
		m.send(frameLost, msg)
	}
	// Only now may Wait return: the root's process exits after it, and a
	// process that saw its connection close before the reason arrived
	// would report the root lost instead of the rank that was (seen in
	// CI: a survivor of a killed rank 1 named rank 0's process).
	r.mu.Lock()
	r.told = true
	r.checkLeft()
	r.mu.Unlock()
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// checkLeft closes left once every process said goodbye or is gone, or
// the job failed and every process was told why. Called with mu held.
func (r *Root) checkLeft() {
	select {
	case <-r.left:
		return
	default:
	}
	if r.failed != "" {
		if r.told {
			close(r.left)
		}
		return
	}
	if r.procs == nil {
		return
	}
	for _, m := range r.procs {
		if !m.bye && !m.gone {
			return
		}
	}
	close(r.left)
}
