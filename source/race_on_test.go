//go:build race

package source

// raceEnabled: the race detector's shadow memory multiplies a process's RSS,
// so memory tests measure the Go heap instead.
const raceEnabled = true
