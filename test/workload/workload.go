// Package workload holds the workload the benchmarks sync, and the floor they compare
// Tether with: the same objects applied by nothing but server-side apply requests.
package workload

import (
	"context"
	"fmt"
	gosync "sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/source"
)

// Apps returns the files of a repository of n apps under apps/, each a Deployment
// with 0 replicas, a Service, a ServiceAccount and a ConfigMap: 4n objects.
func Apps(n int) map[string]string {
	files := map[string]string{}
	for i := 0; i < n; i++ {
		files[fmt.Sprintf("apps/app-%04d.yaml", i)] = App(fmt.Sprintf("app-%04d", i), "hello")
	}
	return files
}

// App is the four objects of one app, its ConfigMap saying greeting.
func App(name, greeting string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: ServiceAccount
metadata: {name: %[1]s}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: %[1]s}
data: {greeting: %[2]q}
---
apiVersion: v1
kind: Service
metadata: {name: %[1]s}
spec:
  selector: {app: %[1]s}
  ports: [{port: 80, targetPort: 8080}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: %[1]s}
spec:
  replicas: 0
  selector: {matchLabels: {app: %[1]s}}
  template:
    metadata: {labels: {app: %[1]s}}
    spec:
      serviceAccountName: %[1]s
      containers: [{name: app, image: registry.k8s.io/pause:3.10}]
`, name, greeting)
}

// Teams returns the files of a monorepo of n teams, one directory each
// (teams/team-0000/, …), each directory ten objects: two apps (App, named
// <team>-web and <team>-worker) and two ConfigMaps of settings. Every object's
// name starts with its team's, so all 10n can live in one namespace.
func Teams(n int) map[string]string {
	files := map[string]string{}
	for i := 0; i < n; i++ {
		team := TeamName(i)
		files["teams/"+team+"/apps.yaml"] = App(team+"-web", "hello") + "---\n" + App(team+"-worker", "hello")
		files["teams/"+team+"/settings.yaml"] = fmt.Sprintf(`apiVersion: v1
kind: ConfigMap
metadata: {name: %[1]s-settings}
data: {logLevel: info, region: local}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: %[1]s-flags}
data: {newCheckout: "false"}
`, team)
	}
	return files
}

// TeamName is the name of team i of Teams, also its directory under teams/.
func TeamName(i int) string { return fmt.Sprintf("team-%04d", i) }

// Floor applies the objects of files into namespace ns with nothing but server-side
// apply requests from workers goroutines, with no client-side rate limit: no read, no
// dry-run, no status. No agent can be faster. It returns the time taken.
// RemoveFloor takes the objects away again.
func Floor(ctx context.Context, cfg *rest.Config, files map[string]string, ns string, workers int) (time.Duration, error) {
	c, objs, err := floorClientAndObjects(cfg, files, ns)
	if err != nil {
		return 0, err
	}
	start := time.Now()
	err = Each(objs, workers, func(o *unstructured.Unstructured) error {
		return c.Apply(ctx, client.ApplyConfigurationFromUnstructured(o), client.FieldOwner("floor"), client.ForceOwnership)
	})
	return time.Since(start), err
}

// RemoveFloor deletes what Floor applied into ns from workers goroutines, and
// returns once each object is gone, so that what a benchmark measures next meets
// the cluster the floor met: the API server's cost of a write grows with the
// objects it holds (a Service's ClusterIP allocation reads every allocated
// address), and a floor left behind would make whatever runs after it pay for the
// floor's objects too.
func RemoveFloor(ctx context.Context, cfg *rest.Config, files map[string]string, ns string, workers int) error {
	c, objs, err := floorClientAndObjects(cfg, files, ns)
	if err != nil {
		return err
	}
	err = Each(objs, workers, func(o *unstructured.Unstructured) error {
		return client.IgnoreNotFound(c.Delete(ctx, o, client.PropagationPolicy(metav1.DeletePropagationBackground)))
	})
	if err != nil {
		return fmt.Errorf("removing the floor's objects: %w", err)
	}
	return nil
}

// floorClientAndObjects returns a client with no client-side rate limit, and the
// objects of files, each put in namespace ns.
func floorClientAndObjects(cfg *rest.Config, files map[string]string, ns string) (client.Client, []*unstructured.Unstructured, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS = -1 // no client-side limiter
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		return nil, nil, err
	}
	objs, err := Objects(files, ns)
	return c, objs, err
}

// Each calls do for every object of objs from workers goroutines and returns the
// first error, once all have returned.
func Each(objs []*unstructured.Unstructured, workers int, do func(*unstructured.Unstructured) error) error {
	return EachIndex(len(objs), workers, func(i int) error { return do(objs[i]) })
}

// EachIndex calls do for 0..n-1 from workers goroutines and returns the first
// error, once all have returned.
func EachIndex(n, workers int, do func(i int) error) error {
	next := make(chan int)
	errs := make(chan error, n)
	var wg gosync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := range next {
				errs <- do(i)
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// Objects decodes the objects of files, each put in namespace ns.
func Objects(files map[string]string, ns string) ([]*unstructured.Unstructured, error) {
	var objs []*unstructured.Unstructured
	for _, data := range files {
		docs, err := source.DecodeManifests([]byte(data))
		if err != nil {
			return nil, err
		}
		objs = append(objs, docs...)
	}
	for _, o := range objs {
		o.SetNamespace(ns)
	}
	return objs, nil
}
