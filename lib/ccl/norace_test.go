//go:build !race

package ccl

const raceEnabled = false
