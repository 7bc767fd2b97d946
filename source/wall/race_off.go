//go:build !race

package wall

// workerRaceBuild: see worker_race_on.go.
const workerRaceBuild = false
