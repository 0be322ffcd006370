package handshake

import (
	"fmt"
	"net"
	"strings"
	"sync"
	"time"
)

// Refusals counts the connections a listener refuses and logs them with a
// rate limit: at most one line per interval, however many arrive. The
// first refusal after a quiet interval is logged at once, with its peer
// and detail; those after it within the interval are counted, by reason,
// and summed up in one line when the interval ends (or at Close).
type Refusals struct {
	prefix string        // what refuses, e.g. "gccl bootstrap root 10.0.0.1:29500"
	every  time.Duration // the interval
	logf   func(line string)

	mu      sync.Mutex
	last    time.Time      // when the last line went out; guarded by mu
	pending []reasonCount  // refusals since then, by reason; guarded by mu
	total   int            // their sum; guarded by mu
	first   string         // the first of them, "peer: reason (detail)"; guarded by mu
	timer   *time.Timer    // the pending summary's; guarded by mu
	closed  bool           // guarded by mu
	all     map[string]int // every refusal so far, by reason; guarded by mu
}

type reasonCount struct {
	reason string
	n      int
}

// maxReasons bounds the reasons a summary lists; further ones count as
// "other" (callers use a few fixed reasons: this only bounds a mistake).
const maxReasons = 8

// NewRefusals logs through logf (one call per line, without a newline)
// at most once per every.
func NewRefusals(prefix string, every time.Duration, logf func(line string)) *Refusals {
	return &Refusals{prefix: prefix, every: every, logf: logf, all: map[string]int{}}
}

// Add records a refused connection from peer: reason is one of the
// caller's few fixed reasons (summaries count by it), detail says more
// about this one ("" for nothing).
func (r *Refusals) Add(peer net.Addr, reason, detail string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	r.all[reason]++
	what := fmt.Sprintf("%v: %s", peer, reason)
	if detail != "" {
		what += " (" + detail + ")"
	}
	now := time.Now()
	if r.total == 0 && now.Sub(r.last) >= r.every {
		r.last = now
		r.logf(fmt.Sprintf("%s: refused a connection from %s", r.prefix, what))
		return
	}
	if r.total == 0 {
		r.first = what
	}
	r.total++
	r.count(reason)
	if r.timer == nil {
		r.timer = time.AfterFunc(r.last.Add(r.every).Sub(now), r.flush)
	}
}

func (r *Refusals) count(reason string) {
	for i := range r.pending {
		if r.pending[i].reason == reason {
			r.pending[i].n++
			return
		}
	}
	if len(r.pending) >= maxReasons-1 {
		reason = "other"
		for i := range r.pending {
			if r.pending[i].reason == reason {
				r.pending[i].n++
				return
			}
		}
	}
	r.pending = append(r.pending, reasonCount{reason, 1})
}

func (r *Refusals) flush() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.timer = nil
	if !r.closed {
		r.summary()
	}
}

// summary logs the pending refusals, if any. Called with mu held.
func (r *Refusals) summary() {
	if r.total == 0 {
		return
	}
	if r.total == 1 {
		r.logf(fmt.Sprintf("%s: refused a connection from %s", r.prefix, r.first))
	} else {
		parts := make([]string, len(r.pending))
		for i, c := range r.pending {
			parts[i] = fmt.Sprintf("%d %s", c.n, c.reason)
		}
		r.logf(fmt.Sprintf("%s: refused %d connections in the last %v (%s; the first from %s)",
			r.prefix, r.total, r.every, strings.Join(parts, ", "), r.first))
	}
	r.last = time.Now()
	r.pending, r.total, r.first = nil, 0, ""
}

// Counts is every refusal so far, by reason.
func (r *Refusals) Counts() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := make(map[string]int, len(r.all))
	for k, v := range r.all {
		m[k] = v
	}
	return m
}

// Close logs what is pending and ignores refusals from now on (those of
// the connections its owner closes as it stops).
func (r *Refusals) Close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	r.closed = true
	if r.timer != nil {
		r.timer.Stop()
		r.timer = nil
	}
	r.summary()
}

// Pending holds a listener's connections that have not authenticated yet:
// at most Limit at once (the next is refused at once), each closed by
// CloseAll so that a listener stops without waiting for their deadlines.
type Pending struct {
	limit  int
	mu     sync.Mutex
	conns  map[net.Conn]struct{} // guarded by mu
	closed bool                  // guarded by mu
}

// NewPending holds at most limit connections.
func NewPending(limit int) *Pending {
	return &Pending{limit: limit, conns: map[net.Conn]struct{}{}}
}

// Limit is the most connections held at once.
func (p *Pending) Limit() int { return p.limit }

// Enter holds c, unless Limit are held already or CloseAll ran: false.
func (p *Pending) Enter(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || len(p.conns) >= p.limit {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

// Leave lets c go (authenticated, or refused).
func (p *Pending) Leave(c net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.conns, c)
}

// Len is how many are held now.
func (p *Pending) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.conns)
}

// CloseAll closes every connection held and refuses the rest.
func (p *Pending) CloseAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	for c := range p.conns {
		c.Close()
	}
}
