package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	gosync "sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/harness"
	"tether.dev/tether/test/workload"
)

// BenchmarkAPIServerCostOfARequest measures what the API server, etcd and the
// client spend on one kind of request for each object of the first sync's
// workload (1,000 objects, or TETHER_BENCH_APPS × 4), each kind into a new
// namespace, 8 at once as the floor sends them: a server-side apply dry-run (what
// the validation gate sends for each object), a dry-run create with strict field
// validation, a server-side apply (the floor's request, and the agent's write), the
// same while four cluster-wide metadata-only watches of the applied kinds are open
// (as the agent's informers are), and a create. It prints the CPU seconds of each
// process and the wall time per kind, in the order run, each kind twice and
// interleaved. With TETHER_BENCH_PROFILE_DIR and TETHER_APISERVER_PROFILING=1 it
// saves a CPU profile of kube-apiserver for each kind's first run.
// TETHER_BENCH_REQUESTS names the kinds to run instead, comma-separated, in order
// ("apply,apply,apply" shows how the cost of the same requests grows with the
// objects the API server holds). Kinds run only when named there: "apply dry-run
// (metadata)" (the answer as PartialObjectMetadata, as the agent asks of an object
// not there yet), "apply dry-run (ignore)" and "apply (ignore)" (with
// fieldValidation=Ignore, as the agent sends them), and "apply (raw)" (the apply
// as a raw patch without it, to compare with "apply (ignore)").
//
// It says what the validation gate can cost at least: Tether's first sync sends a
// dry-run and a write for each object, so its API server time is at least the sum
// of the two rows, against the floor's one.
func BenchmarkAPIServerCostOfARequest(b *testing.B) {
	apps := benchApps(b)
	cp := controlplane.Shared(b)
	cfg := rest.CopyConfig(cp.Config())
	cfg.QPS = -1 // as the floor: no client-side limit
	c, err := client.New(cfg, client.Options{})
	harness.Must(b, err)
	requests := map[string]func(ctx context.Context, o *unstructured.Unstructured) error{
		"apply dry-run": func(ctx context.Context, o *unstructured.Unstructured) error {
			return c.Apply(ctx, client.ApplyConfigurationFromUnstructured(o), client.FieldOwner("bench"), client.ForceOwnership, client.DryRunAll)
		},
		"apply dry-run (metadata)": func(ctx context.Context, o *unstructured.Unstructured) error {
			body, err := o.MarshalJSON()
			if err != nil {
				return err
			}
			meta := &metav1.PartialObjectMetadata{}
			meta.SetGroupVersionKind(o.GroupVersionKind())
			meta.SetNamespace(o.GetNamespace())
			meta.SetName(o.GetName())
			return c.Patch(ctx, meta, client.RawPatch(types.ApplyPatchType, body), client.FieldOwner("bench"), client.ForceOwnership, client.DryRunAll)
		},
		"apply dry-run (ignore)": func(ctx context.Context, o *unstructured.Unstructured) error {
			return rawApply(ctx, c, o, client.DryRunAll, client.FieldValidation("Ignore"))
		},
		"apply (ignore)": func(ctx context.Context, o *unstructured.Unstructured) error {
			return rawApply(ctx, c, o, client.FieldValidation("Ignore"))
		},
		"apply (raw)": func(ctx context.Context, o *unstructured.Unstructured) error {
			return rawApply(ctx, c, o)
		},
		"create dry-run": func(ctx context.Context, o *unstructured.Unstructured) error {
			return c.Create(ctx, o, client.FieldOwner("bench"), client.DryRunAll, client.FieldValidation("Strict"))
		},
		"apply": func(ctx context.Context, o *unstructured.Unstructured) error {
			return c.Apply(ctx, client.ApplyConfigurationFromUnstructured(o), client.FieldOwner("bench"), client.ForceOwnership)
		},
		"apply, watched": func(ctx context.Context, o *unstructured.Unstructured) error {
			return c.Apply(ctx, client.ApplyConfigurationFromUnstructured(o), client.FieldOwner("bench"), client.ForceOwnership)
		},
		"create": func(ctx context.Context, o *unstructured.Unstructured) error {
			return c.Create(ctx, o, client.FieldOwner("bench"), client.FieldValidation("Strict"))
		},
	}
	order := []string{"apply dry-run", "apply dry-run (metadata)", "create dry-run", "apply", "apply, watched", "create"}
	if v := os.Getenv("TETHER_BENCH_REQUESTS"); v != "" {
		order = strings.Split(v, ",")
		for _, kind := range order {
			if requests[kind] == nil {
				b.Fatalf("TETHER_BENCH_REQUESTS=%q: no kind of request %q", v, kind)
			}
		}
	}
	profiles := os.Getenv("TETHER_BENCH_PROFILE_DIR")
	for b.Loop() {
		fmt.Fprintf(os.Stdout, "\nwhat one kind of request costs, for each of %d objects (8 at once):\n", 4*apps)
		for round := range 2 {
			for _, kind := range order {
				objs, err := workload.Objects(workload.Apps(apps), controlplane.NewNamespace(b, cp.Config()))
				harness.Must(b, err)
				var stopWatches func()
				if kind == "apply, watched" {
					stopWatches = watchMetadata(b, cfg)
				}
				meter := meterCPU(b, benchPids(cp, os.Getpid(), "client"))
				wait := func() {}
				if round == 0 {
					wait = profileAPIServer(b, cfg, profiles, "apiserver-"+filepath.Base(fmt.Sprintf("%q", kind))+".pb.gz", max(time.Second, time.Duration(len(objs))*time.Millisecond))
				}
				send, start := requests[kind], time.Now()
				harness.Must(b, workload.Each(objs, floorWorkers, func(o *unstructured.Unstructured) error { return send(b.Context(), o) }))
				took := time.Since(start)
				spent := meter.stop()
				wait()
				if stopWatches != nil {
					stopWatches()
				}
				fmt.Fprintf(os.Stdout, "  %-16s %9s   %s\n", kind, took.Round(time.Millisecond), formatCPU(spent))
			}
		}
	}
}

// watchMetadata opens cluster-wide metadata-only watches of the workload's kinds,
// as the agent's informers hold them, and reads their events until stopped.
func watchMetadata(tb testing.TB, cfg *rest.Config) (stop func()) {
	tb.Helper()
	mc, err := metadata.NewForConfig(cfg)
	harness.Must(tb, err)
	ctx, cancel := context.WithCancel(tb.Context())
	var wg gosync.WaitGroup
	for _, gvr := range []schema.GroupVersionResource{
		{Group: "apps", Version: "v1", Resource: "deployments"},
		{Version: "v1", Resource: "services"},
		{Version: "v1", Resource: "serviceaccounts"},
		{Version: "v1", Resource: "configmaps"},
	} {
		w, err := mc.Resource(gvr).Watch(ctx, metav1.ListOptions{})
		harness.Must(tb, err)
		wg.Go(func() {
			for range w.ResultChan() {
			}
		})
		context.AfterFunc(ctx, w.Stop)
	}
	return func() {
		cancel()
		wg.Wait()
	}
}

// rawApply sends o as a server-side apply through Patch (controller-runtime's Apply
// takes no field validation), with opts.
func rawApply(ctx context.Context, c client.Client, o *unstructured.Unstructured, opts ...client.PatchOption) error {
	body, err := o.MarshalJSON()
	if err != nil {
		return err
	}
	return c.Patch(ctx, o.DeepCopy(), client.RawPatch(types.ApplyPatchType, body), append([]client.PatchOption{client.FieldOwner("bench"), client.ForceOwnership}, opts...)...)
}
