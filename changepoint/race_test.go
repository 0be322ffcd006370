//go:build race

package changepoint

const raceEnabled = true
