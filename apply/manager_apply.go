package apply

import (
	"context"
	"errors"
	"fmt"
	"sort"
	gosync "sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ApplyAll makes the cluster hold objs. Objects are applied in stages (Namespaces and
// CRDs, then cluster-scoped objects, then namespaced ones); within a stage every
// object is dry-run before any is written, and a stage with a failed dry-run writes
// nothing and stops the call. A CRD written in the first stage is waited for until
// it is Established and its kinds map, so that its custom resources can be applied
// in the same call. The returned error joins the *ObjectError of every
// object that failed; the ChangeSet is returned either way.
//
// objs are modified: namespaced objects without a namespace get
// opts.DefaultNamespace, and cluster-scoped objects lose a stray namespace.
func (m *Manager) ApplyAll(ctx context.Context, objs []*unstructured.Unstructured, opts Options) (*ChangeSet, error) {
	if opts.Concurrency < 1 {
		opts.Concurrency = 1
	}
	cs := &ChangeSet{}
	stages := stagesOf(objs)
	for i, stage := range stages {
		changes, err := m.applyStage(ctx, stage, opts)
		cs.Changes = append(cs.Changes, changes...)
		if err == nil && i+1 < len(stages) {
			err = m.waitForCRDs(ctx, changes, stage)
		}
		if err != nil {
			for _, rest := range stages[i+1:] {
				for _, obj := range rest {
					cs.Changes = append(cs.Changes, Change{Object: RefOf(obj), Action: ActionSkipped})
				}
			}
			return cs, err
		}
	}
	return cs, nil
}

// applyStage dry-runs every object of a stage, then writes those that differ.
func (m *Manager) applyStage(ctx context.Context, objs []*unstructured.Unstructured, opts Options) ([]Change, error) {
	changes := make([]Change, len(objs))
	forEach(len(objs), opts.Concurrency, func(i int) {
		changes[i] = m.plan(ctx, objs[i], opts)
	})
	if err := failures(changes); err != nil {
		for i := range changes {
			if changes[i].Action != ActionFailed {
				changes[i] = Change{Object: changes[i].Object, Action: ActionSkipped}
			}
		}
		return changes, err
	}
	forEach(len(objs), opts.Concurrency, func(i int) {
		if changes[i].Action == ActionUnchanged {
			return
		}
		live, err := m.apply(ctx, objs[i], opts, false)
		if err != nil {
			changes[i] = Change{Object: changes[i].Object, Action: ActionFailed, Err: &ObjectError{Object: changes[i].Object, Op: "apply", Err: err}}
			return
		}
		changes[i].Live = live
	})
	return changes, failures(changes)
}

// crdTimeout bounds the wait for a CRD written in one stage to be served before
// the next stage, which may hold its custom resources, is mapped.
const crdTimeout = 30 * time.Second

// waitForCRDs waits until every CRD the stage created or configured is Established
// and each of its served versions maps, so that custom resources of it in a later
// stage of the same call can be applied. A mapper that caches discovery is reset
// while waiting, or it would keep answering "no match" for the new kinds.
func (m *Manager) waitForCRDs(ctx context.Context, changes []Change, stage []*unstructured.Unstructured) error {
	for i, obj := range stage {
		if !isCRD(obj) || (changes[i].Action != ActionCreated && changes[i].Action != ActionConfigured) {
			continue
		}
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, crdTimeout, true, func(ctx context.Context) (bool, error) {
			return m.crdServed(ctx, obj)
		})
		if err != nil {
			return &ObjectError{Object: changes[i].Object, Op: "wait", Err: fmt.Errorf("CRD not established: %w", err)}
		}
	}
	return nil
}

// crdServed reports whether crd is Established and all its served versions map.
func (m *Manager) crdServed(ctx context.Context, crd *unstructured.Unstructured) (bool, error) {
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(crd.GroupVersionKind())
	if err := m.client.Get(ctx, client.ObjectKeyFromObject(crd), live); err != nil {
		return false, err
	}
	conditions, _, _ := unstructured.NestedSlice(live.Object, "status", "conditions")
	established := false
	for _, c := range conditions {
		cond, _ := c.(map[string]any)
		if cond["type"] == "Established" && cond["status"] == "True" {
			established = true
		}
	}
	if !established {
		return false, nil
	}
	if r, ok := m.mapper.(meta.ResettableRESTMapper); ok {
		r.Reset()
	}
	group, _, _ := unstructured.NestedString(live.Object, "spec", "group")
	kind, _, _ := unstructured.NestedString(live.Object, "spec", "names", "kind")
	versions, _, _ := unstructured.NestedSlice(live.Object, "spec", "versions")
	for _, v := range versions {
		version, _ := v.(map[string]any)
		name, _ := version["name"].(string)
		if served, _ := version["served"].(bool); !served {
			continue
		}
		_, err := m.mapper.RESTMapping(schema.GroupKind{Group: group, Kind: kind}, name)
		if meta.IsNoMatchError(err) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
	}
	return true, nil
}

// plan works out what applying obj would do, without writing: it reads the live
// object and compares it with the server-side dry-run of the apply.
func (m *Manager) plan(ctx context.Context, obj *unstructured.Unstructured, opts Options) Change {
	fail := func(op string, err error) Change {
		ref := RefOf(obj)
		return Change{Object: ref, Action: ActionFailed, Err: &ObjectError{Object: ref, Op: op, Err: err}}
	}
	if err := m.normalize(obj, opts); err != nil {
		return fail("map", err)
	}
	ref := RefOf(obj)
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(obj.GroupVersionKind())
	err := m.client.Get(ctx, client.ObjectKeyFromObject(obj), live)
	exists := err == nil
	if err != nil && !apierrors.IsNotFound(err) {
		return fail("read", err)
	}
	dry, err := m.apply(ctx, obj, opts, true)
	if err != nil {
		return fail("dry-run", err)
	}
	switch {
	case !exists:
		return Change{Object: ref, Action: ActionCreated}
	case equality.Semantic.DeepEqual(dry.Object, live.Object):
		return Change{Object: ref, Action: ActionUnchanged, Live: live}
	}
	return Change{Object: ref, Action: ActionConfigured}
}

// apply sends one server-side apply. Tether forces ownership of the fields it
// applies: git is the source of truth for every field it declares.
func (m *Manager) apply(ctx context.Context, obj *unstructured.Unstructured, opts Options, dryRun bool) (*unstructured.Unstructured, error) {
	out := obj.DeepCopy()
	out.SetManagedFields(nil)
	out.SetResourceVersion("")
	applyOpts := []client.ApplyOption{client.FieldOwner(opts.FieldManager), client.ForceOwnership}
	if dryRun {
		applyOpts = append(applyOpts, client.DryRunAll)
	}
	if err := m.client.Apply(ctx, client.ApplyConfigurationFromUnstructured(out), applyOpts...); err != nil {
		return nil, err
	}
	return out, nil
}

// normalize gives obj the namespace its scope calls for.
func (m *Manager) normalize(obj *unstructured.Unstructured, opts Options) error {
	mapping, err := m.mapper.RESTMapping(obj.GroupVersionKind().GroupKind(), obj.GroupVersionKind().Version)
	if err != nil {
		return err
	}
	if mapping.Scope.Name() != meta.RESTScopeNameNamespace {
		obj.SetNamespace("")
		return nil
	}
	if obj.GetNamespace() == "" {
		if opts.DefaultNamespace == "" {
			return errNoNamespace
		}
		obj.SetNamespace(opts.DefaultNamespace)
	}
	return nil
}

// stagesOf splits objs into the stages they must be applied in: Namespaces and CRDs
// first (everything else may depend on them), then the rest in a stable kind order.
func stagesOf(objs []*unstructured.Unstructured) [][]*unstructured.Unstructured {
	var first, rest []*unstructured.Unstructured
	for _, o := range objs {
		if isNamespaceOrCRD(o) {
			first = append(first, o)
		} else {
			rest = append(rest, o)
		}
	}
	sort.SliceStable(rest, func(i, j int) bool { return kindRank(rest[i]) < kindRank(rest[j]) })
	var stages [][]*unstructured.Unstructured
	for _, s := range [][]*unstructured.Unstructured{first, rest} {
		if len(s) > 0 {
			stages = append(stages, s)
		}
	}
	return stages
}

func isNamespaceOrCRD(o *unstructured.Unstructured) bool {
	gk := o.GroupVersionKind().GroupKind()
	return (gk.Group == "" && gk.Kind == "Namespace") || isCRD(o)
}

func isCRD(o *unstructured.Unstructured) bool {
	gk := o.GroupVersionKind().GroupKind()
	return gk.Group == "apiextensions.k8s.io" && gk.Kind == "CustomResourceDefinition"
}

// kindRank orders kinds that others commonly refer to before their users, the way
// kubectl and Helm do: accounts and config before the workloads that mount them.
func kindRank(o *unstructured.Unstructured) int {
	switch o.GetKind() {
	case "ServiceAccount", "ClusterRole", "Role":
		return 0
	case "ClusterRoleBinding", "RoleBinding":
		return 1
	case "ConfigMap", "Secret", "PersistentVolumeClaim":
		return 2
	case "Service":
		return 3
	}
	return 4
}

func failures(changes []Change) error {
	var errs []error
	for _, c := range changes {
		if c.Err != nil {
			errs = append(errs, c.Err)
		}
	}
	return errors.Join(errs...)
}

// forEach runs fn for 0..n-1 on at most workers goroutines and waits for all.
func forEach(n, workers int, fn func(i int)) {
	if workers > n {
		workers = n
	}
	next := make(chan int)
	var wg gosync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				fn(i)
			}
		}()
	}
	for i := 0; i < n; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
}
