package apply

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"sort"
	gosync "sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/metadata"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"tether.dev/tether/api/v1alpha1"
)

// recreateTimeout bounds the wait for a deleted object to be gone before it is
// recreated.
const recreateTimeout = 30 * time.Second

// ApplyAll makes the cluster hold objs, in stages: Namespaces and CRDs first, then
// everything else, cluster-scoped kinds and the kinds others refer to first. A CRD
// written in the first stage is waited for until it is Established and its kinds
// map, so that its custom resources can be applied in the same call.
//
// A stage is validated whole before any of it is written: every object is compared
// with the cluster through a server-side apply dry-run (missing objects too), and if
// any fails (invalid, forbidden, denied by admission, an immutable field without
// tether.dev/force, an unknown kind) nothing of that stage or of a later one is
// written. The objects that would have been written come back as ActionHeld, and
// the error is a *ValidationError naming every failing object. Only the first stage
// (the Namespaces and CRDs that later objects need in order to be validated at all)
// can be written before a later stage fails its validation.
//
// Objects that passed validation and differ or are missing are then written;
// Options.BeforeWrite is told which first (the write-ahead inventory). A failure at
// write time (a conflict, a timeout) is reported in the ChangeSet, and the returned
// error joins the *ObjectError of every failed object. The ChangeSet is returned
// either way and lists every object of objs.
//
// objs are modified: namespaced objects without a namespace get
// opts.DefaultNamespace, and cluster-scoped objects lose a stray namespace.
func (m *Manager) ApplyAll(ctx context.Context, objs []*unstructured.Unstructured, opts Options) (*ChangeSet, error) {
	if opts.Concurrency < 1 {
		opts.Concurrency = 1
	}
	cs := &ChangeSet{DryRun: opts.DryRun, Changes: make([]Change, 0, len(objs))}
	targets := newScaleTargets(m.client, objs, opts.DefaultNamespace)
	sc := m.scopes
	stages := stagesOf(objs)
	for i, objs := range stages {
		steps, stage := make([]step, len(objs)), make([]*step, len(objs))
		for i, obj := range objs {
			steps[i] = step{obj: obj, change: Change{Object: RefOf(obj)}}
			stage[i] = &steps[i]
		}
		forEach(len(stage), dryRunConcurrency(opts), func(i int) { m.plan(ctx, stage[i], sc, targets, opts) })
		if !opts.DryRun {
			err := stageFailures(stage)
			if err != nil {
				err = &ValidationError{Errs: ObjectErrors(err)}
			} else {
				err = m.writeStage(ctx, stage, opts)
			}
			if err != nil {
				// Nothing of this stage or a later one is written.
				n := len(cs.Changes)
				cs.Changes = appendChanges(cs.Changes, stage)
				held(cs.Changes[n:])
				cs.Changes = append(cs.Changes, unplanned(stages[i+1:], sc, opts)...)
				return cs, err
			}
		}
		cs.Changes = appendChanges(cs.Changes, stage)
	}
	return cs, failures(cs.Changes)
}

// writeStage writes the objects of a validated stage that differ or are missing,
// after BeforeWrite has recorded them, and waits for the CRDs among them.
func (m *Manager) writeStage(ctx context.Context, stage []*step, opts Options) error {
	var writes []v1alpha1.ObjectRef
	for _, st := range stage {
		if st.change.Action == ActionCreated || st.change.Action == ActionConfigured {
			writes = append(writes, st.change.Object)
		}
	}
	if len(writes) == 0 {
		return nil
	}
	if opts.BeforeWrite != nil {
		if err := opts.BeforeWrite(ctx, writes); err != nil {
			return fmt.Errorf("recording %d objects before writing them: %w", len(writes), err)
		}
	}
	forEach(len(stage), opts.Concurrency, func(i int) { m.write(ctx, stage[i], opts) })
	m.waitForCRDs(ctx, stage)
	for _, st := range stage {
		// write let go of every other object it wrote; a CRD only now, once
		// waitForCRDs has read it.
		if isCRD(st.obj) && (st.change.Action == ActionCreated || st.change.Action == ActionConfigured) {
			st.release(opts)
		}
	}
	return nil
}

// appendChanges appends the change of each step of stage to changes.
func appendChanges(changes []Change, stage []*step) []Change {
	for _, st := range stage {
		changes = append(changes, st.change)
	}
	return changes
}

// stageFailures joins the errors of the steps of stage.
func stageFailures(stage []*step) error {
	var errs []error
	for _, st := range stage {
		if st.change.Err != nil {
			errs = append(errs, st.change.Err)
		}
	}
	return errors.Join(errs...)
}

// held turns the changes a failed validation kept from being written into
// ActionHeld; failures and unchanged objects stay as they are.
func held(changes []Change) {
	for i, c := range changes {
		switch c.Action {
		case ActionCreated, ActionConfigured:
			changes[i].Action = ActionHeld
			changes[i].Note = NoteHeld
		case ActionFailed:
			changes[i].Note = NoteRefused
		}
	}
}

// unplanned lists the objects of stages that were never reached as ActionHeld, in
// the namespace they would have been applied to.
func unplanned(stages [][]*unstructured.Unstructured, sc *scopes, opts Options) []Change {
	var out []Change
	for _, objs := range stages {
		for _, obj := range objs {
			out = append(out, Change{Object: RefOf(placed(obj, sc, opts)), Action: ActionHeld, Note: NoteHeld})
		}
	}
	return out
}

// step is one object's way through ApplyAll.
type step struct {
	obj      *unstructured.Unstructured
	send     *unstructured.Unstructured // obj without the fields left to others
	ignored  []fieldpath.Path
	change   Change
	hash     digest
	recreate bool                       // the dry-run hit an immutable field and the object allows force
	stale    *unstructured.Unstructured // the live object a recreate deletes
	rereads  int                        // times the object was read again because it changed mid-compare
}

// maxRereads bounds how often compare reads an object again because another writer
// changed it between the read and the dry-run (a controller busy with a rollout).
const maxRereads = 3

func (st *step) fail(op string, err error) {
	st.change = Change{Object: st.change.Object, Action: ActionFailed, Err: &ObjectError{Object: st.change.Object, Op: op, Err: err}}
}

// plan works out what applying the object would do, without writing. Cheap before
// expensive: when the desired object and the live resourceVersion are both what was
// last verified, it is unchanged without a single request; otherwise the live object
// is read and compared with the server-side dry-run of the apply.
func (m *Manager) plan(ctx context.Context, st *step, sc *scopes, targets *scaleTargets, opts Options) {
	if err := normalize(st.obj, sc, opts); err != nil {
		st.change.Object = RefOf(placed(st.obj, sc, opts))
		st.fail("map", err)
		return
	}
	st.send = st.obj
	st.change.Object = RefOf(st.obj)
	ref := st.change.Object
	st.hash = hashOf(st.obj, opts.FieldManager, ignoreSalt(st.obj, opts))
	if live, ignored, ok := m.verifiedLive(ctx, ref, st.hash); ok {
		st.change.Action, st.change.Live, st.change.Ignored = ActionUnchanged, live, ignored
		st.release(opts)
		return
	}
	m.compare(ctx, st, targets, opts, m.knownAbsent(ctx, ref))
}

// release empties the object once nothing is left to do with it, when the
// caller gives its objects up (Options.Release).
func (st *step) release(opts Options) {
	if opts.Release {
		st.obj.Object, st.send = nil, nil
	}
}

// compare reads the live object, unless the watch cache says there is none (absent),
// and compares it with the server-side dry-run of the apply.
func (m *Manager) compare(ctx context.Context, st *step, targets *scaleTargets, opts Options, absent bool) {
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(st.obj.GroupVersionKind())
	exists := false
	if !absent {
		err := retryTransient(ctx, func() error { return m.client.Get(ctx, client.ObjectKeyFromObject(st.obj), live) })
		if err != nil && !apierrors.IsNotFound(err) {
			st.fail("read", err)
			return
		}
		exists = err == nil
	}
	var err error
	if owner := live.GetAnnotations()[v1alpha1.OwnedByAnnotation]; exists && owner != "" && owner != st.obj.GetAnnotations()[v1alpha1.OwnedByAnnotation] {
		st.fail("claim", &ClaimedError{Owner: owner})
		return
	}
	var own owners
	if exists {
		if st.change.TakenOver, err = m.takeOver(ctx, live, opts); err != nil {
			st.fail("take over", err)
			return
		}
		own = ownersOf(live)
		scaled, err := targets.autoscaled(ctx, st.obj, live, opts)
		if err != nil {
			st.fail("read", err)
			return
		}
		st.ignored = ignoredPaths(st.obj, live, own, scaled, opts)
		st.send, st.change.Ignored = withoutIgnored(st.obj, live, st.ignored, own, opts.FieldManager)
	}
	var dry *unstructured.Unstructured
	if exists || opts.DryRun {
		dry, err = m.dryRun(ctx, st.send, opts.FieldManager)
	} else {
		dry, err = m.dryRunNew(ctx, st.send, opts.FieldManager)
	}
	switch {
	case err != nil && exists && IsImmutable(err) && st.obj.GetAnnotations()[v1alpha1.ForceAnnotation] == "true":
		if !st.keepLive(live) {
			return
		}
		st.change.Action, st.recreate, st.stale = ActionConfigured, true, live
		st.change.Diff = []string{"(immutable field: delete and recreate)"}
		return
	case err != nil:
		st.fail("dry-run", err)
		return
	case !exists && absent && dry.GetResourceVersion() != "":
		// The watch had not seen the object yet (a dry-run create comes back without
		// a resourceVersion, one of an existing object with its version): read it
		// after all, so that its owner and other managers' fields are checked.
		m.compare(ctx, st, targets, opts, false)
		return
	case !exists:
		st.change.Action = ActionCreated
		st.foretell(dry, opts)
		return
	}
	if dry.GetResourceVersion() != live.GetResourceVersion() && st.rereads < maxRereads {
		// The read and the dry-run saw different versions of the object: another
		// writer changed it in between (the deployment controller setting its
		// revision annotation mid-rollout), and comparing the two would report that
		// writer's change as drift. Compare two views of one version instead.
		st.rereads++
		m.compare(ctx, st, targets, opts, false)
		return
	}
	ref := st.change.Object
	if diff := Compare(stripped(dry, st.ignored), stripped(live, st.ignored)); len(diff) > 0 {
		m.verified.forget(ref)
		st.change.Reverted = reverted(live, dry, st.send, own, opts.FieldManager)
		if st.keepLive(live) {
			st.change.Action, st.change.Diff = ActionConfigured, diff
			st.foretell(dry, opts)
		}
		return
	}
	if st.keepLive(live) {
		m.verified.remember(ref, st.hash, live.GetResourceVersion(), st.change.Live, st.change.Ignored)
		st.change.Action = ActionUnchanged
		st.release(opts)
	}
}

// keepLive sets the change's Live to live, as JSON, and reports whether it
// could (an answer of the API server that does not encode again fails the
// object, never met).
func (st *step) keepLive(live *unstructured.Unstructured) bool {
	obj, err := NewObject(live)
	if err != nil {
		st.fail("read", err)
		return false
	}
	st.change.Live = obj
	return true
}

// keepAnswer is keepLive for a write's answer, which patch returns as the API
// server's JSON (data) or decoded (live), and returns its resourceVersion.
func (st *step) keepAnswer(data []byte, live *unstructured.Unstructured) (string, bool) {
	if live != nil {
		return live.GetResourceVersion(), st.keepLive(live)
	}
	obj, rv, err := liveJSON(data)
	if err != nil {
		st.fail("read", err)
		return "", false
	}
	st.change.Live = obj
	return rv, true
}

// foretell keeps the dry-run of an object that differs or is missing as the
// change's Desired, in a dry run: `tether diff` shows it. An apply that writes
// keeps none (what it writes is Live after the write); held over the whole stage,
// the dry-runs of a first sync weighed as much as the revision's live objects.
func (st *step) foretell(dry *unstructured.Unstructured, opts Options) {
	if opts.DryRun {
		dry.SetManagedFields(nil)
		st.change.Desired = dry
	}
}

// write applies an object that plan found different or missing.
func (m *Manager) write(ctx context.Context, st *step, opts Options) {
	if st.change.Action != ActionCreated && st.change.Action != ActionConfigured {
		return
	}
	if st.recreate {
		if err := m.remove(ctx, st.stale); err != nil {
			st.fail("recreate", err)
			return
		}
		st.change.Recreated = true
	}
	data, live, err := m.patch(ctx, st.send, opts.FieldManager)
	if err != nil {
		st.fail("apply", err)
		return
	}
	st.stale = nil
	if rv, ok := st.keepAnswer(data, live); ok {
		m.verified.remember(st.change.Object, st.hash, rv, st.change.Live, st.change.Ignored)
	}
	if !isCRD(st.obj) { // waitForCRDs reads it, then writeStage lets it go
		st.release(opts)
	}
}

// dryRun sends obj as a server-side apply dry-run and returns what the API server
// would make of it.
func (m *Manager) dryRun(ctx context.Context, obj *unstructured.Unstructured, fieldManager string) (*unstructured.Unstructured, error) {
	return m.send(ctx, obj, fieldManager, client.DryRunAll)
}

// dryRunNew sends obj, which is not in the cluster, as a server-side apply dry-run
// and returns the answer's metadata only (name, namespace, resourceVersion): of an
// object that would be created, an apply needs to know only that the API server
// would take it, and that it is still not there. With ManagerOptions.Metadata the
// answer comes as PartialObjectMetadata, in protobuf where the API server offers it,
// which costs the API server and the agent less than the whole object as JSON
// (BenchmarkAPIServerCostOfARequest: "apply dry-run (metadata)").
func (m *Manager) dryRunNew(ctx context.Context, obj *unstructured.Unstructured, fieldManager string) (*unstructured.Unstructured, error) {
	if m.metadata == nil {
		return m.dryRun(ctx, obj, fieldManager)
	}
	mapping, err := m.scopes.mapping(obj.GroupVersionKind())
	if err != nil {
		return nil, err
	}
	_, body, err := request(obj)
	if err != nil {
		return nil, err
	}
	resources := m.metadata.Resource(mapping.Resource)
	var resource metadata.ResourceInterface = resources
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		resource = resources.Namespace(obj.GetNamespace())
	}
	force := true
	opts := metav1.PatchOptions{FieldManager: fieldManager, Force: &force, DryRun: []string{metav1.DryRunAll}, FieldValidation: fieldValidation}
	var answer *metav1.PartialObjectMetadata
	err = retryTransient(ctx, func() (err error) {
		answer, err = resource.Patch(ctx, obj.GetName(), types.ApplyPatchType, body, opts)
		return err
	})
	if err != nil {
		return nil, err
	}
	out := &unstructured.Unstructured{}
	out.SetGroupVersionKind(obj.GroupVersionKind())
	out.SetNamespace(answer.GetNamespace())
	out.SetName(answer.GetName())
	out.SetResourceVersion(answer.GetResourceVersion())
	return out, nil
}

// patch writes obj as a server-side apply patch and returns the object written:
// with ManagerOptions.Raw as the API server's JSON, else decoded.
func (m *Manager) patch(ctx context.Context, obj *unstructured.Unstructured, fieldManager string) ([]byte, *unstructured.Unstructured, error) {
	if m.raw == nil {
		live, err := m.send(ctx, obj, fieldManager)
		return nil, live, err
	}
	mapping, err := m.scopes.mapping(obj.GroupVersionKind())
	if err != nil {
		return nil, nil, err
	}
	_, body, err := request(obj)
	if err != nil {
		return nil, nil, err
	}
	prefix := "/apis/" + mapping.Resource.Group + "/" + mapping.Resource.Version
	if mapping.Resource.Group == "" {
		prefix = "/api/" + mapping.Resource.Version
	}
	var data []byte
	err = retryTransient(ctx, func() error {
		res := m.raw.Patch(types.ApplyPatchType).AbsPath(prefix).
			NamespaceIfScoped(obj.GetNamespace(), mapping.Scope.Name() == meta.RESTScopeNameNamespace).
			Resource(mapping.Resource.Resource).Name(obj.GetName()).
			Param("fieldManager", fieldManager).Param("force", "true").Param("fieldValidation", fieldValidation).
			Body(body).Do(ctx)
		if err := res.Error(); err != nil {
			return err
		}
		data, err = res.Raw()
		return err
	})
	return data, nil, err
}

// send sends one server-side apply with extra options, retried while it fails
// transiently. Tether forces ownership of the fields it applies: git is the source
// of truth for every field it declares.
//
// obj is not changed: the request is sent from a copy of its top level and metadata
// (without managedFields and resourceVersion), which the answer then replaces whole.
func (m *Manager) send(ctx context.Context, obj *unstructured.Unstructured, fieldManager string, extra ...client.PatchOption) (*unstructured.Unstructured, error) {
	out, body, err := request(obj)
	if err != nil {
		return nil, err
	}
	patchOpts := append([]client.PatchOption{client.FieldOwner(fieldManager), client.ForceOwnership, client.FieldValidation(fieldValidation)}, extra...)
	err = retryTransient(ctx, func() error {
		return m.client.Patch(ctx, out, client.RawPatch(types.ApplyPatchType, body), patchOpts...)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// fieldValidation is the field validation an apply asks for. The API server's
// default (Warn) parses the body of a server-side apply a second time, strictly, to
// find keys given twice, after the apply itself has refused every field the kind's
// schema does not declare; a body encoded from a map has no key twice, so Ignore
// spares that parse (a tenth of a dry-run's cost to the API server) and refuses
// exactly what Warn refuses (TestUnknownFieldsAreRefused).
const fieldValidation = metav1.FieldValidationIgnore

// request is what an apply of obj sends: a copy of its top level and metadata,
// without managedFields and resourceVersion, and that copy as JSON.
func request(obj *unstructured.Unstructured) (*unstructured.Unstructured, []byte, error) {
	out := &unstructured.Unstructured{Object: maps.Clone(obj.Object)}
	if meta, ok := obj.Object["metadata"].(map[string]any); ok {
		meta = maps.Clone(meta)
		delete(meta, "managedFields")
		delete(meta, "resourceVersion")
		out.Object["metadata"] = meta
	}
	body, err := json.Marshal(out.Object)
	return out, body, err
}

// remove deletes live, this exact object (by UID), and waits until it is gone, so
// that it can be created again with new immutable fields.
func (m *Manager) remove(ctx context.Context, live *unstructured.Unstructured) error {
	uid := live.GetUID()
	err := m.client.Delete(ctx, live, client.Preconditions{UID: &uid}, client.PropagationPolicy(metav1.DeletePropagationBackground))
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, recreateTimeout, true, func(ctx context.Context) (bool, error) {
		probe := &unstructured.Unstructured{}
		probe.SetGroupVersionKind(live.GroupVersionKind())
		err := m.client.Get(ctx, client.ObjectKeyFromObject(live), probe)
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return err == nil && probe.GetUID() != uid, err
	})
}

// knownAbsent reports whether the watch cache, synced, holds no object ref: then
// there is nothing to read (a first sync costs a dry-run and an apply per object).
func (m *Manager) knownAbsent(ctx context.Context, ref v1alpha1.ObjectRef) bool {
	if m.live == nil {
		return false
	}
	rv, ok := m.live.ResourceVersion(ctx, ref.GroupVersionKind(), ref.Namespace, ref.Name)
	return ok && rv == ""
}

// verifiedLive returns the live object last verified to match the desired one, if
// neither has changed since: same desired hash, same resourceVersion in the watch
// cache.
func (m *Manager) verifiedLive(ctx context.Context, ref v1alpha1.ObjectRef, hash digest) (*Object, []IgnoredField, bool) {
	if m.live == nil {
		return nil, nil, false
	}
	rv, ok := m.live.ResourceVersion(ctx, ref.GroupVersionKind(), ref.Namespace, ref.Name)
	if !ok || rv == "" {
		return nil, nil, false
	}
	return m.verified.lookup(ref, hash, rv)
}

// placed is obj in the namespace it is applied to, also when its kind does not map
// (not served, or not yet): then it is taken to be namespaced, as most kinds are, so
// that it is named the same way as when it was applied.
func placed(obj *unstructured.Unstructured, sc *scopes, opts Options) *unstructured.Unstructured {
	if err := normalize(obj, sc, opts); err != nil && obj.GetNamespace() == "" {
		obj.SetNamespace(opts.DefaultNamespace)
	}
	return obj
}

// normalize gives obj the namespace its scope calls for.
func normalize(obj *unstructured.Unstructured, sc *scopes, opts Options) error {
	namespaced, err := sc.namespaced(obj.GroupVersionKind())
	if err != nil {
		return err
	}
	if !namespaced {
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

// scopes tells whether a kind is namespaced, and under which resource it is
// served, asking the mapper once a kind: controller-runtime's mapper makes an
// error for every API group it passes on each call, and a fleet's converged
// reconciles, which map every object of every Sync, allocated tens of MB a second
// in them (heap profile).
type scopes struct {
	mapper meta.RESTMapper
	now    func() time.Time
	mu     gosync.Mutex
	known  map[schema.GroupVersionKind]*meta.RESTMapping
	since  time.Time // when known was last emptied
}

// scopeMemory is how long a Manager trusts the mapping it learnt of a kind. A kind's
// scope changes only when its CRD is deleted and created again with another (the
// field is immutable), and the mapper itself answers from what it discovered until a
// kind does not map; remembering the answer spares the mapper's walk through every
// API group, which allocates an error per group, for each kind of each reconcile.
const scopeMemory = time.Minute

func newScopes(mapper meta.RESTMapper) *scopes {
	return &scopes{mapper: mapper, now: time.Now, known: map[schema.GroupVersionKind]*meta.RESTMapping{}}
}

// namespaced reports whether objects of gvk live in a namespace.
func (s *scopes) namespaced(gvk schema.GroupVersionKind) (bool, error) {
	mapping, err := s.mapping(gvk)
	if err != nil {
		return false, err
	}
	return mapping.Scope.Name() == meta.RESTScopeNameNamespace, nil
}

// mapping returns the mapper's mapping of gvk. A kind that does not map is asked
// again at each call (it may be served by then); one that does is asked again once
// what the scopes know is older than scopeMemory.
func (s *scopes) mapping(gvk schema.GroupVersionKind) (*meta.RESTMapping, error) {
	s.mu.Lock()
	if now := s.now(); now.Sub(s.since) > scopeMemory {
		clear(s.known)
		s.since = now
	}
	mapping, ok := s.known[gvk]
	s.mu.Unlock()
	if ok {
		return mapping, nil
	}
	mapping, err := s.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.known[gvk] = mapping
	s.mu.Unlock()
	return mapping, nil
}

// forget drops what the scopes know, for a mapper that has just been reset (a CRD
// was written).
func (s *scopes) forget() {
	s.mu.Lock()
	clear(s.known)
	s.mu.Unlock()
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
// kubectl and Helm do: cluster-wide definitions, then accounts and config, then the
// workloads that use them.
func kindRank(o *unstructured.Unstructured) int {
	switch o.GetKind() {
	case "PriorityClass", "StorageClass", "ClusterRole":
		return 0
	case "ClusterRoleBinding", "ServiceAccount", "Role":
		return 1
	case "RoleBinding", "ConfigMap", "Secret", "PersistentVolumeClaim", "LimitRange", "ResourceQuota":
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
