package render

// The worst shapes of YAML, for the external tests that measure them through
// the render wall (worst_memory_test.go).
var (
	WorstShapes       = worstShapes
	KustomizedShape   = kustomizedShape
	RaceSkippedShapes = raceSkippedShapes
	WorstRender       = worstRender
	ShippedDirOptions = shippedRenderOptions
)
