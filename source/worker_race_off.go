//go:build !race

package source

// workerRaceBuild: see worker_race_on.go.
const workerRaceBuild = false
