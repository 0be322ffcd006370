// Package history is the results store: one SQLite file that keeps every
// run of the perf gate (its commit, branch, time, machine, tool and
// provenance) with its records, keyed as the gate keys them (ci.Key), so
// that a key's values can be read back as a series over the runs.
//
// The file is embedded SQLite through a pure-Go driver (modernc.org/sqlite),
// so CGO_ENABLED=0 builds stay static. It is versioned: the header's
// application id marks it as a gccl history (a foreign SQLite file or
// any other file is refused, never written), and the meta table holds the
// schema version; an older file is migrated in one transaction on Open, a
// newer one refused.
//
// Several processes may add at once (two CI jobs sharing a file): every
// write is one transaction that takes the write lock when it begins, and a
// writer that finds the lock taken waits (the busy timeout) instead of
// failing. The file is in WAL mode where the file system allows it, so
// readers do not block the writer.
//
// A run keeps what the gate compares of each record: the key, the reported
// and median times, the bus bandwidth, ref_copy_gbps and the per-iteration
// times thinned to the gate's 100 order statistics. It keeps no
// environment: the records' variables (Record.Env) and file names
// (Record.Source) stay out, and the run's metadata holds only provenance
// fields (tool, revision, host, CPU, Go, NCCL and CUDA versions, launcher).
//
// Export writes JSON Lines, one run a line with its records; Import reads
// them back. A run's identity is a hash of its content, so importing (or
// adding) the same run twice keeps one copy. Each line is:
//
//	{"format":1,"commit":"…","branch":"…","time":"RFC 3339","machine":"…",
//	 "tool":"…","meta":{"cpu":"…",…},"records":[{"collective":"allreduce",
//	 "type":"float","op":"sum","algorithm":"auto","protocol":"auto",
//	 "channels":0,"buffsize":0,"nranks":2,"nhosts":1,"size":8,
//	 "placement":"out-of-place","time_us":2.5,"median_us":2.2,
//	 "busbw_gbps":0.003,"ref_copy_gbps":6.7,"samples":[2.1,…]},…]}
package history
