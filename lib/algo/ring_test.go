package algo_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gccl/gccl/lib/algo"
	"github.com/gccl/gccl/lib/topo"
)

func TestPrimPredicates(t *testing.T) {
	table := []struct {
		p                                            algo.Prim
		name                                         string
		recvs, sends, readsInput, writesOut, reduces bool
	}{
		{algo.Send, "send", false, true, true, false, false},
		{algo.Recv, "recv", true, false, false, true, false},
		{algo.RecvReduceSend, "recvReduceSend", true, true, true, false, true},
		{algo.RecvCopySend, "recvCopySend", true, true, false, true, false},
		{algo.RecvReduceCopySend, "recvReduceCopySend", true, true, true, true, true},
		{algo.CopySend, "copySend", false, true, true, true, false},
		{algo.RecvReduceCopy, "recvReduceCopy", true, false, true, true, true},
	}
	for _, r := range table {
		got := [5]bool{r.p.Recvs(), r.p.Sends(), r.p.ReadsInput(), r.p.WritesOutput(), r.p.Reduces()}
		want := [5]bool{r.recvs, r.sends, r.readsInput, r.writesOut, r.reduces}
		if got != want {
			t.Errorf("%v: [Recvs Sends ReadsInput WritesOutput Reduces] = %v, want %v", r.p, got, want)
		}
		if r.p.String() != r.name {
			t.Errorf("Prim(%d).String() = %q, want %q", int(r.p), r.p.String(), r.name)
		}
		// Every primitive moves data somewhere, and reducing implies both
		// receiving and reading the input.
		if !r.p.Recvs() && !r.p.Sends() || r.p.Reduces() && (!r.p.Recvs() || !r.p.ReadsInput()) {
			t.Errorf("%v: inconsistent predicates", r.p)
		}
	}
	if len(table) != int(algo.RecvReduceCopy)+1 {
		t.Fatalf("table misses primitives")
	}
	for _, p := range []algo.Prim{-1, algo.RecvReduceCopy + 1, 99} {
		if s := p.String(); s != fmt.Sprintf("Prim(%d)", int(p)) {
			t.Errorf("invalid prim prints as %q", s)
		}
	}
}

// ---- Sequential ring simulator -------------------------------------------

// msg is what travels on a ring edge: the chunk, the set of ranks whose
// inputs it contains (bit r = rank r) and how many post-ops were applied.
type msg struct {
	chunk int
	val   uint64
	posts int
}

// cell is one chunk of a rank's output.
type cell struct {
	val   uint64
	posts int
}

// sched picks the order in which positions get a turn and how far each runs.
type sched struct {
	name   string
	greedy bool       // run a position until it blocks instead of one step
	rng    *rand.Rand // shuffle the positions every round
}

func scheds() []sched {
	return []sched{
		{name: "round-robin"},
		{name: "greedy", greedy: true},
		{name: "random1", rng: rand.New(rand.NewPCG(1, 2))},
		{name: "random2-greedy", greedy: true, rng: rand.New(rand.NewPCG(3, 4))},
	}
}

// simulate runs progs[p], the program of ring position p (rank order[p]),
// with one FIFO per ring edge p -> p+1 of the given capacity (0: unbounded).
// A position blocks on an empty input queue or a full output queue. It
// returns every position's outputs, or an error on a protocol violation or a
// deadlock; at the end every queue must be empty.
func simulate(order []int, progs [][]algo.Step, capacity int, s sched) ([]map[int]cell, error) {
	n := len(order)
	queues := make([][]msg, n) // queues[p]: edge (p-1) -> p
	outs := make([]map[int]cell, n)
	pc := make([]int, n)
	for p := range outs {
		outs[p] = map[int]cell{}
	}
	// try runs the next step of position p; false if it is blocked.
	try := func(p int) (bool, error) {
		st := progs[p][pc[p]]
		me := uint64(1) << order[p]
		in, out := &queues[p], &queues[(p+1)%n]
		where := func() string {
			return fmt.Sprintf("position %d (rank %d) step %d %v chunk %d", p, order[p], pc[p], st.Prim, st.Chunk)
		}
		if st.Prim.Recvs() && len(*in) == 0 {
			return false, nil
		}
		if st.Prim.Sends() && capacity > 0 && len(*out) >= capacity {
			return false, nil
		}
		var m msg
		if st.Prim.Recvs() {
			m = (*in)[0]
			*in = (*in)[1:]
			if m.chunk != st.Chunk {
				return false, fmt.Errorf("%s received chunk %d", where(), m.chunk)
			}
		}
		if st.Post && !st.Prim.Reduces() {
			return false, fmt.Errorf("%s: post-op on a step that does not reduce", where())
		}
		reduce := func() error {
			if m.val&me != 0 {
				return fmt.Errorf("%s: rank %d's input already in %b", where(), order[p], m.val)
			}
			if m.posts != 0 {
				return fmt.Errorf("%s: reducing into post-processed data", where())
			}
			m.val |= me
			if st.Post {
				m.posts++
			}
			return nil
		}
		write := func() error {
			if _, dup := outs[p][st.Chunk]; dup {
				return fmt.Errorf("%s: output chunk written twice", where())
			}
			outs[p][st.Chunk] = cell{val: m.val, posts: m.posts}
			return nil
		}
		var err error
		switch st.Prim {
		case algo.Send:
			m = msg{chunk: st.Chunk, val: me}
		case algo.CopySend:
			m = msg{chunk: st.Chunk, val: me}
			err = write()
		case algo.Recv, algo.RecvCopySend:
			err = write()
		case algo.RecvReduceSend:
			err = reduce()
		case algo.RecvReduceCopySend, algo.RecvReduceCopy:
			if err = reduce(); err == nil {
				err = write()
			}
		default:
			err = fmt.Errorf("%s: unknown primitive", where())
		}
		if err != nil {
			return false, err
		}
		if st.Prim.Sends() {
			*out = append(*out, m)
		}
		pc[p]++
		return true, nil
	}
	perm := make([]int, n)
	for i := range perm {
		perm[i] = i
	}
	for {
		if s.rng != nil {
			s.rng.Shuffle(n, func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
		}
		progress, done := false, true
		for _, p := range perm {
			for pc[p] < len(progs[p]) {
				ok, err := try(p)
				if err != nil {
					return nil, err
				}
				if !ok {
					break
				}
				progress = true
				if !s.greedy {
					break
				}
			}
			if pc[p] < len(progs[p]) {
				done = false
			}
		}
		if done {
			break
		}
		if !progress {
			var b strings.Builder
			for p := range progs {
				if pc[p] < len(progs[p]) {
					fmt.Fprintf(&b, " [pos %d at step %d %v chunk %d, %d queued]", p, pc[p], progs[p][pc[p]].Prim, progs[p][pc[p]].Chunk, len(queues[p]))
				}
			}
			return nil, fmt.Errorf("deadlock:%s", b.String())
		}
	}
	for p, q := range queues {
		if len(q) != 0 {
			return nil, fmt.Errorf("edge into position %d left with %d messages (first chunk %d)", p, len(q), q[0].chunk)
		}
	}
	return outs, nil
}

// loops repeats a per-loop schedule, shifting the chunk ids of loop l by
// l*n so that chunks of different loops are told apart.
func loops(steps []algo.Step, n, nLoops int) []algo.Step {
	var out []algo.Step
	for l := 0; l < nLoops; l++ {
		for _, s := range steps {
			s.Chunk += l * n
			out = append(out, s)
		}
	}
	return out
}

// collective builds the programs of one collective and checks the outputs.
type collective struct {
	name  string
	chain bool // a chain (not a cycle) of dependencies
	progs func(order []int) [][]algo.Step
	check func(order []int, outs []map[int]cell) error
}

const simLoops = 2
const simChunks = 3 // chunks pipelined through broadcast/reduce

func full(n int) uint64 { return 1<<n - 1 }

func expectCells(p int, got map[int]cell, want map[int]cell) error {
	if len(got) != len(want) {
		return fmt.Errorf("position %d wrote chunks %v, want %v", p, got, want)
	}
	for c, w := range want {
		if g, ok := got[c]; !ok || g != w {
			return fmt.Errorf("position %d chunk %d = %+v (present %v), want %+v", p, c, g, ok, w)
		}
	}
	return nil
}

func allReduce() collective {
	return collective{
		name: "allreduce",
		progs: func(order []int) [][]algo.Step {
			n := len(order)
			progs := make([][]algo.Step, n)
			for ix := range progs {
				progs[ix] = loops(algo.RingAllReduce(n, ix), n, simLoops)
			}
			return progs
		},
		check: func(order []int, outs []map[int]cell) error {
			n := len(order)
			for p := range outs {
				want := map[int]cell{}
				for c := 0; c < n*simLoops; c++ {
					want[c] = cell{val: full(n), posts: 1}
				}
				if err := expectCells(p, outs[p], want); err != nil {
					return err
				}
			}
			return nil
		},
	}
}

func allGather() collective {
	return collective{
		name: "allgather",
		progs: func(order []int) [][]algo.Step {
			n := len(order)
			progs := make([][]algo.Step, n)
			for ix := range progs {
				progs[ix] = loops(algo.RingAllGather(order, ix), n, simLoops)
			}
			return progs
		},
		check: func(order []int, outs []map[int]cell) error {
			n := len(order)
			for p := range outs {
				want := map[int]cell{}
				for c := 0; c < n*simLoops; c++ {
					want[c] = cell{val: 1 << (c % n)} // rank r's block holds rank r's data
				}
				if err := expectCells(p, outs[p], want); err != nil {
					return err
				}
			}
			return nil
		},
	}
}

func reduceScatter() collective {
	return collective{
		name: "reducescatter",
		progs: func(order []int) [][]algo.Step {
			n := len(order)
			progs := make([][]algo.Step, n)
			for ix := range progs {
				progs[ix] = loops(algo.RingReduceScatter(order, ix), n, simLoops)
			}
			return progs
		},
		check: func(order []int, outs []map[int]cell) error {
			n := len(order)
			for p := range outs {
				want := map[int]cell{} // only my own block, fully reduced
				for l := 0; l < simLoops; l++ {
					want[l*n+order[p]] = cell{val: full(n), posts: 1}
				}
				if err := expectCells(p, outs[p], want); err != nil {
					return err
				}
			}
			return nil
		},
	}
}

func broadcast(root int) collective {
	return collective{
		name:  fmt.Sprintf("broadcast(root %d)", root),
		chain: true,
		progs: func(order []int) [][]algo.Step {
			progs := make([][]algo.Step, len(order))
			for ix := range progs {
				prim := algo.ChainBroadcast(order, ix, root)
				for k := 0; k < simChunks; k++ {
					progs[ix] = append(progs[ix], algo.Step{Prim: prim, Chunk: k})
				}
			}
			return progs
		},
		check: func(order []int, outs []map[int]cell) error {
			for p := range outs {
				want := map[int]cell{}
				for k := 0; k < simChunks; k++ {
					want[k] = cell{val: 1 << root}
				}
				if err := expectCells(p, outs[p], want); err != nil {
					return err
				}
			}
			return nil
		},
	}
}

func reduce(root int) collective {
	return collective{
		name:  fmt.Sprintf("reduce(root %d)", root),
		chain: true,
		progs: func(order []int) [][]algo.Step {
			progs := make([][]algo.Step, len(order))
			for ix := range progs {
				st := algo.ChainReduce(order, ix, root)
				for k := 0; k < simChunks; k++ {
					st.Chunk = k
					progs[ix] = append(progs[ix], st)
				}
			}
			return progs
		},
		check: func(order []int, outs []map[int]cell) error {
			n := len(order)
			for p := range outs {
				want := map[int]cell{}
				if order[p] == root {
					for k := 0; k < simChunks; k++ {
						want[k] = cell{val: full(n), posts: 1}
					}
				}
				if err := expectCells(p, outs[p], want); err != nil {
					return err
				}
			}
			return nil
		},
	}
}

func collectives(n int) []collective {
	cs := []collective{allReduce(), allGather(), reduceScatter()}
	for root := 0; root < n; root++ {
		cs = append(cs, broadcast(root), reduce(root))
	}
	return cs
}

func runCollective(c collective, order []int, capacity int, s sched) error {
	outs, err := simulate(order, c.progs(order), capacity, s)
	if err != nil {
		return err
	}
	return c.check(order, outs)
}

// TestRingSchedulesSimulated runs every rank's schedule of every ring
// collective through the sequential simulator, for 2..9 ranks, both ring
// directions of topo.Rings, FIFOs holding 2 chunks, 8 chunks (NCCL_STEPS) or
// unbounded, and several interleavings. The pipelined chains (broadcast,
// reduce) must also work with FIFOs of a single chunk.
func TestRingSchedulesSimulated(t *testing.T) {
	for n := 2; n <= 9; n++ {
		for ri, ring := range topo.Rings(n, 2) {
			for _, c := range collectives(n) {
				caps := []int{2, 8, 0}
				if c.chain {
					caps = append(caps, 1)
				}
				for _, capacity := range caps {
					for _, s := range scheds() {
						if err := runCollective(c, ring.Order, capacity, s); err != nil {
							t.Fatalf("n=%d ring %d %v %s capacity %d sched %s: %v", n, ri, ring.Order, c.name, capacity, s.name, err)
						}
					}
				}
			}
		}
	}
}

// TestRingNeedsTwoChunksOfBuffering documents why a ring chunk may use at
// most half of the FIFO (CHUNKSTEPS = NCCL_STEPS/2): every rank of a ring
// starts by sending, and then each needs a receive and a send credit at
// once, so FIFOs that hold a single chunk deadlock. The simulator must see
// it. (With 2 ranks, allgather and reducescatter have no step that both
// receives and sends, so they do not need the second chunk.)
func TestRingNeedsTwoChunksOfBuffering(t *testing.T) {
	for n := 2; n <= 9; n++ {
		order := topo.Rings(n, 1)[0].Order
		for _, c := range []collective{allReduce(), allGather(), reduceScatter()} {
			err := runCollective(c, order, 1, sched{name: "rr"})
			if n == 2 && c.name != "allreduce" {
				if err != nil {
					t.Fatalf("n=2 %s with 1-chunk FIFOs: %v", c.name, err)
				}
				continue
			}
			if err == nil || !strings.Contains(err.Error(), "deadlock") {
				t.Fatalf("n=%d %s with 1-chunk FIFOs: got %v, want a deadlock", n, c.name, err)
			}
		}
	}
}

// countComm counts the receives and sends of a schedule.
func countComm(steps []algo.Step) (recvs, sends int) {
	for _, s := range steps {
		if s.Prim.Recvs() {
			recvs++
		}
		if s.Prim.Sends() {
			sends++
		}
	}
	return recvs, sends
}

// TestRingScheduleShapes pins the step counts and the first/last
// primitives. "2(n-1) steps" (DESIGN.md section 4) counts communication
// steps: allreduce runs 2n-1 primitives that together make 2(n-1) receives
// and 2(n-1) sends; allgather and reducescatter run n primitives with n-1
// receives and n-1 sends.
func TestRingScheduleShapes(t *testing.T) {
	for n := 2; n <= 9; n++ {
		order := topo.Rings(n, 1)[0].Order
		for ix := 0; ix < n; ix++ {
			ar := algo.RingAllReduce(n, ix)
			r, s := countComm(ar)
			if len(ar) != 2*n-1 || r != 2*(n-1) || s != 2*(n-1) || ar[0].Prim != algo.Send || ar[len(ar)-1].Prim != algo.Recv {
				t.Fatalf("allreduce n=%d ix=%d: %v", n, ix, ar)
			}
			posts := 0
			for _, s := range ar {
				if s.Chunk < 0 || s.Chunk >= n {
					t.Fatalf("allreduce n=%d ix=%d: chunk out of range in %v", n, ix, ar)
				}
				if s.Post {
					posts++
					if s.Prim != algo.RecvReduceCopySend || s.Chunk != ix {
						t.Fatalf("allreduce n=%d ix=%d: post on %+v", n, ix, s)
					}
				}
			}
			if posts != 1 {
				t.Fatalf("allreduce n=%d ix=%d: %d post steps", n, ix, posts)
			}
			ag := algo.RingAllGather(order, ix)
			r, s = countComm(ag)
			if len(ag) != n || r != n-1 || s != n-1 || ag[0] != (algo.Step{Prim: algo.CopySend, Chunk: order[ix]}) {
				t.Fatalf("allgather n=%d ix=%d: %v", n, ix, ag)
			}
			rs := algo.RingReduceScatter(order, ix)
			r, s = countComm(rs)
			if len(rs) != n || r != n-1 || s != n-1 || rs[len(rs)-1] != (algo.Step{Prim: algo.RecvReduceCopy, Chunk: order[ix], Post: true}) {
				t.Fatalf("reducescatter n=%d ix=%d: %v", n, ix, rs)
			}
		}
	}
	// n=3, ix=0, spelled out.
	got := algo.RingAllReduce(3, 0)
	want := []algo.Step{
		{Prim: algo.Send, Chunk: 2},
		{Prim: algo.RecvReduceSend, Chunk: 1},
		{Prim: algo.RecvReduceCopySend, Chunk: 0, Post: true},
		{Prim: algo.RecvCopySend, Chunk: 2},
		{Prim: algo.Recv, Chunk: 1},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("RingAllReduce(3,0) = %v, want %v", got, want)
	}
}

// TestSimulatorCatchesBrokenSchedules makes sure the simulator is not
// vacuous: each mutation of a correct schedule must be rejected.
func TestSimulatorCatchesBrokenSchedules(t *testing.T) {
	order := []int{0, 1, 2, 3, 4}
	n := len(order)
	base := func() [][]algo.Step {
		progs := make([][]algo.Step, n)
		for ix := range progs {
			progs[ix] = algo.RingAllReduce(n, ix)
		}
		return progs
	}
	ar := allReduce()
	mutations := []struct {
		name   string
		mutate func(progs [][]algo.Step)
	}{
		{"swapped chunks", func(p [][]algo.Step) { p[2][1], p[2][2] = p[2][2], p[2][1] }},
		{"missing post", func(p [][]algo.Step) { p[1][n-1].Post = false }},
		{"double post", func(p [][]algo.Step) { p[1][n].Prim = algo.RecvReduceCopySend; p[1][n].Post = true }},
		{"reduce becomes copy", func(p [][]algo.Step) { p[3][1].Prim = algo.RecvCopySend }},
		{"extra reduction", func(p [][]algo.Step) { p[3][n].Prim = algo.RecvReduceCopySend }},
		{"reversed rank", func(p [][]algo.Step) { slicesReverse(p[0]) }},
		{"dropped last recv", func(p [][]algo.Step) { p[4] = p[4][:len(p[4])-1] }},
		{"send becomes copySend", func(p [][]algo.Step) { p[0][0].Prim = algo.CopySend }},
	}
	for _, m := range mutations {
		failed := true
		for _, capacity := range []int{2, 0} {
			progs := base()
			m.mutate(progs)
			outs, err := simulate(order, progs, capacity, sched{name: "rr"})
			if err == nil {
				err = ar.check(order, outs)
			}
			if err == nil {
				failed = false
			} else {
				t.Logf("%s (capacity %d): %v", m.name, capacity, err)
			}
		}
		if !failed {
			t.Errorf("mutation %q was not detected", m.name)
		}
	}
	// Broadcast from the wrong root and reduce with two roots.
	bad := make([][]algo.Step, n)
	for ix := range bad {
		bad[ix] = []algo.Step{{Prim: algo.ChainBroadcast(order, ix, 2)}}
	}
	if outs, err := simulate(order, bad, 0, sched{}); err == nil && broadcast(3).check(order, outs) == nil {
		t.Errorf("broadcast from the wrong root passed")
	}
	for ix := range bad {
		bad[ix] = []algo.Step{algo.ChainReduce(order, ix, 2)}
	}
	bad[4] = []algo.Step{{Prim: algo.RecvReduceCopy, Post: true}}
	if _, err := simulate(order, bad, 0, sched{}); err == nil {
		t.Errorf("reduce with a second root passed")
	}
}

func slicesReverse(s []algo.Step) {
	for i, j := 0, len(s)-1; i < j; i, j = i+1, j-1 {
		s[i], s[j] = s[j], s[i]
	}
}

// TestChainRoles checks the roles of broadcast and reduce: exactly one
// rank starts the chain, exactly one ends it, and they are ring neighbours.
func TestChainRoles(t *testing.T) {
	for n := 2; n <= 9; n++ {
		for _, ring := range topo.Rings(n, 2) {
			order := ring.Order
			for root := 0; root < n; root++ {
				var bStart, bEnd, rStart, rEnd []int
				for ix := 0; ix < n; ix++ {
					switch algo.ChainBroadcast(order, ix, root) {
					case algo.CopySend:
						bStart = append(bStart, ix)
					case algo.Recv:
						bEnd = append(bEnd, ix)
					}
					switch st := algo.ChainReduce(order, ix, root); st.Prim {
					case algo.Send:
						rStart = append(rStart, ix)
					case algo.RecvReduceCopy:
						rEnd = append(rEnd, ix)
						if !st.Post {
							t.Fatalf("reduce root without post-op")
						}
					}
				}
				if len(bStart) != 1 || len(bEnd) != 1 || order[bStart[0]] != root || (bEnd[0]+1)%n != bStart[0] {
					t.Fatalf("n=%d %v root %d: broadcast starts %v ends %v", n, order, root, bStart, bEnd)
				}
				if len(rStart) != 1 || len(rEnd) != 1 || order[rEnd[0]] != root || (rEnd[0]+1)%n != rStart[0] {
					t.Fatalf("n=%d %v root %d: reduce starts %v ends %v", n, order, root, rStart, rEnd)
				}
			}
		}
	}
}
