//go:build !race

package changepoint

const raceEnabled = false
