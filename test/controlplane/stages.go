package controlplane

import (
	"embed"
	"fmt"
	"os"
	"path/filepath"

	"sigs.k8s.io/yaml"
)

// Annotations on a pod (set them in a workload's pod template) that make kwok play
// a kubelet whose pod fails, through the stages in stages/. A pod without any of
// them becomes Ready, as with kwok's own stages.
const (
	// ContainerWaitingAnnotation set to a waiting reason (CrashLoopBackOff,
	// ImagePullBackOff, ErrImagePull, ...) keeps every container of the pod waiting
	// with that reason.
	ContainerWaitingAnnotation = "kwok.tether.dev/container-waiting"
	// NeverReadyAnnotation keeps the pod running and never ready, as if its
	// readiness probe always failed.
	NeverReadyAnnotation = "kwok.tether.dev/never-ready"
	// FailAnnotation makes the pod fail: every container exits with code 1.
	FailAnnotation = "kwok.tether.dev/fail"
)

var faultAnnotations = []string{ContainerWaitingAnnotation, NeverReadyAnnotation, FailAnnotation}

//go:embed stages/*.yaml
var faultStages embed.FS

// writeStages writes the kwok stages a control plane with workloads runs into its
// directory and returns their paths: kwok's own (from `make testbin`), with
// pod-ready and pod-complete told to leave the pods that carry a fault annotation
// alone (a never-ready pod of a Job runs until deleted), and the fault stages
// themselves.
func (c *ControlPlane) writeStages() ([]string, error) {
	dir := filepath.Join(c.dir, "kwok-stages")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var paths []string
	for _, src := range c.bins.kwokStages {
		data, err := os.ReadFile(src)
		if err != nil {
			return nil, err
		}
		if base := filepath.Base(src); base == "pod-ready.yaml" || base == "pod-complete.yaml" {
			if data, err = withoutFaultyPods(data); err != nil {
				return nil, fmt.Errorf("%s: %w", src, err)
			}
		}
		path := filepath.Join(dir, filepath.Base(src))
		if err := os.WriteFile(path, data, 0o644); err != nil {
			return nil, err
		}
		paths = append(paths, path)
	}
	entries, err := faultStages.ReadDir("stages")
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		data, err := faultStages.ReadFile("stages/" + e.Name())
		if err != nil {
			return nil, err
		}
		path := filepath.Join(dir, e.Name())
		if err := os.WriteFile(path, data, 0o644); err != nil {
			return nil, err
		}
		paths = append(paths, path)
	}
	return paths, nil
}

// withoutFaultyPods adds to a stage's selector that the pod carries none of the
// fault annotations.
func withoutFaultyPods(stage []byte) ([]byte, error) {
	var doc map[string]any
	if err := yaml.Unmarshal(stage, &doc); err != nil {
		return nil, err
	}
	spec, _ := doc["spec"].(map[string]any)
	selector, _ := spec["selector"].(map[string]any)
	if selector == nil {
		return nil, fmt.Errorf("the stage has no spec.selector")
	}
	exprs, _ := selector["matchExpressions"].([]any)
	for _, a := range faultAnnotations {
		exprs = append(exprs, map[string]any{"key": fmt.Sprintf(".metadata.annotations[%q]", a), "operator": "DoesNotExist"})
	}
	selector["matchExpressions"] = exprs
	return yaml.Marshal(doc)
}
