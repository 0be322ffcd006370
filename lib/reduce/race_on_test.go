//go:build race

package reduce

// raceEnabled trims the slowest table tests under -race, where they only
// look for data races: the plain run checks the full tables.
const raceEnabled = true
