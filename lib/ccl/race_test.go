//go:build race

package ccl

const raceEnabled = true
