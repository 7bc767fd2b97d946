package sync

import (
	"crypto/sha256"
	"encoding/json"
	gosync "sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/apply"
	"tether.dev/tether/source"
)

// maxRefusedRetry bounds how long a revision the API server refused whole waits
// before its apply is tried again.
const maxRefusedRetry = 5 * time.Minute

// refusedRevisions remembers, by Sync, the desired state whose dry-run the API
// server refused for good (its validation or its schema said no, or the Sync's
// identity may not write it): nothing of it was written, and the same objects
// ask the same question again. Git is still polled at the Sync's interval, but
// the dry-run of the same objects is retried only after a backoff that doubles
// from the interval up to maxRefusedRetry, so that a Sync stuck on a broken
// commit does not cost the API server (and the agent's reconcile workers, which
// the other Syncs wait for) a dry-run of everything at each interval.
//
// Anything else retries at once: a new commit, a new generation of the Sync,
// other rendered objects (values, substitutions), a person's request for a
// reconcile, and an agent restart (the memory is the agent's alone). A refusal
// that names a kind the cluster does not serve is not remembered: a CRD that
// another Sync is installing is waited for at the interval, as before.
type refusedRevisions struct {
	mu   gosync.Mutex
	byID map[types.NamespacedName]refusal
}

// refusal is one desired state the API server refused: its digest, how many
// times in a row, and when its apply may be tried again.
type refusal struct {
	digest [sha256.Size]byte
	times  int
	next   time.Time
}

// digestIfRefused returns the digest of what an apply of snap asks, when obj's
// status shows its last apply refused at validation: only then may the apply
// wait, and only then is the digest worth its cost (the apply releases the
// objects, so it is taken before).
func digestIfRefused(obj *v1alpha1.Sync, snap *source.Snapshot) *[sha256.Size]byte {
	c := meta.FindStatusCondition(obj.Status.Conditions, v1alpha1.StalledCondition)
	if c == nil || c.Status != "True" || c.Reason != v1alpha1.ReasonValidationFailed {
		return nil
	}
	d := desiredDigest(obj, snap)
	return &d
}

// waits reports whether the apply of the objects of digest for obj waits: the
// same objects were refused before and their retry is not due at now.
func (m *refusedRevisions) waits(obj *v1alpha1.Sync, digest *[sha256.Size]byte, now time.Time) bool {
	if digest == nil || reconcileRequested(obj) {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	last, ok := m.byID[types.NamespacedName{Namespace: obj.Namespace, Name: obj.Name}]
	return ok && last.digest == *digest && now.Before(last.next)
}

// record keeps the outcome of an apply of the objects of digest: a lasting
// refusal at validation is remembered with its next retry, after interval
// doubled once per refusal in a row (up to maxRefusedRetry); anything else,
// or an apply whose digest was not taken, forgets the Sync.
func (m *refusedRevisions) record(key types.NamespacedName, digest *[sha256.Size]byte, err error, interval time.Duration, now time.Time) {
	if digest == nil || !lastingRefusal(err) {
		m.forget(key)
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.byID == nil {
		m.byID = map[types.NamespacedName]refusal{}
	}
	r := m.byID[key]
	if r.digest != *digest {
		r = refusal{digest: *digest}
	}
	wait := min(interval<<min(r.times, 16), max(maxRefusedRetry, interval))
	r.times++
	r.next = now.Add(wait)
	m.byID[key] = r
}

func (m *refusedRevisions) forget(key types.NamespacedName) {
	m.mu.Lock()
	delete(m.byID, key)
	m.mu.Unlock()
}

// lastingRefusal says whether err is a dry-run the API server refused for a
// reason the same objects meet again, no kind among them unknown.
func lastingRefusal(err error) bool {
	if err == nil || !apply.IsValidation(err) || !apply.IsInvalid(err) {
		return false
	}
	for _, oe := range apply.ObjectErrors(err) {
		if meta.IsNoMatchError(oe.Err) {
			return false
		}
	}
	return true
}

// desiredDigest identifies what an apply of snap asks of the API server: the
// Sync's generation (its spec) and the objects rendered. It is computed only
// for a Sync whose apply was refused.
func desiredDigest(obj *v1alpha1.Sync, snap *source.Snapshot) [sha256.Size]byte {
	h := sha256.New()
	enc := json.NewEncoder(h)
	_ = enc.Encode([]any{obj.UID, obj.Generation, snap.Revision.String(), snap.Path})
	for _, o := range snap.Objects {
		_ = enc.Encode(o.Object)
	}
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return sum
}
