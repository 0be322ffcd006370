//go:build race

package exact

// The race detector slows the exhaustive tests about tenfold; they then run
// on smaller samples (the data are shared read-only, the only concurrency
// being the table cache, which every test still exercises).
const raceEnabled = true
