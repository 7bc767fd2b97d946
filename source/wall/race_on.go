//go:build race

package wall

// workerRaceBuild: the race detector's shadow memory is writable private
// memory that RLIMIT_DATA would refuse, so a race build's workers are held to
// their memory by the agent's watch alone.
const workerRaceBuild = true
