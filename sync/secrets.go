package sync

import (
	"context"
	gosync "sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"tether.dev/tether/api/v1alpha1"
)

// secretWatcher is a reader of credentials Secrets that can also watch them; the
// controller's readers are (client.WithWatch), a test's plain reader need not be.
type secretWatcher interface {
	Watch(ctx context.Context, list client.ObjectList, opts ...client.ListOption) (watch.Interface, error)
}

// SecretWatch queues a Sync as soon as a Secret it names (the credentials of
// spec.source.secretRef, the keys of spec.decryption.secretRef) changes, is
// created or is deleted, so that rotated credentials and keys are used at once
// rather than at the next interval. Each Secret is watched on its own (a field selector on its
// name), metadata only, as the identity that reads it for the Sync: no Secret's data
// is ever held, and an identity that may not watch its Secret (RBAC grants it only
// "get") keeps working, with rotations seen at the next interval.
type SecretWatch struct {
	events chan event.GenericEvent

	mu      gosync.Mutex
	ctx     context.Context // the manager's, once started
	secrets map[secretKey]*watchedSecret
	syncs   map[secretUse]secretKey
}

// secretUse is one field of a Sync that names a Secret.
type secretUse struct {
	sync  types.NamespacedName
	field string
}

// Fields of a Sync that name a Secret, each watched on its own.
const (
	fieldSourceSecret     = "spec.source.secretRef"
	fieldDecryptionSecret = "spec.decryption.secretRef"
)

// secretKey names a watch: one Secret, as one identity ("" the agent's own).
type secretKey struct{ user, namespace, name string }

type watchedSecret struct {
	cancel context.CancelFunc
	users  map[secretUse]bool
	// seen is the resourceVersion last known ("" for a Secret that did not exist):
	// events that bring no other version (a watch re-established) queue nothing.
	seen string
	// live is true while a watch of it is open: seen is then the newest version,
	// or a newer one is on its way and queues the users.
	live bool
}

// NewSecretWatch returns a SecretWatch; add it to the manager (it watches only
// while it runs, on the leader) and feed Source to the controller.
func NewSecretWatch() *SecretWatch {
	return &SecretWatch{
		events:  make(chan event.GenericEvent, 1024),
		secrets: map[secretKey]*watchedSecret{},
		syncs:   map[secretUse]secretKey{},
	}
}

// Start runs until ctx ends, then stops every watch.
func (s *SecretWatch) Start(ctx context.Context) error {
	s.mu.Lock()
	s.ctx = ctx
	s.mu.Unlock()
	<-ctx.Done()
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, w := range s.secrets {
		w.cancel()
		delete(s.secrets, k)
	}
	clear(s.syncs)
	return nil
}

// NeedLeaderElection makes it run where the reconciler runs: on the leader.
func (s *SecretWatch) NeedLeaderElection() bool { return true }

// Source feeds the reconciler the Syncs whose Secret changed.
func (s *SecretWatch) Source() source.Source {
	return source.Channel(s.events, &handler.EnqueueRequestForObject{})
}

// Track makes sure the Secret namespace/name that field of syncKey's Sync names,
// and that the Sync reads as user (through r), is watched, with seen the
// resourceVersion the Sync's reconcile read ("" when it was not found), and
// stops the watch of a Secret the field named before. Readers that cannot watch
// are not watched.
func (s *SecretWatch) Track(syncKey types.NamespacedName, field, user string, r client.Reader, namespace, name, seen string) {
	w, ok := r.(secretWatcher)
	if s == nil || !ok {
		return
	}
	use := secretUse{sync: syncKey, field: field}
	key := secretKey{user: user, namespace: namespace, name: name}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ctx == nil {
		return
	}
	if old, ok := s.syncs[use]; ok && old != key {
		s.untrack(use, old)
	}
	s.syncs[use] = key
	if ws, ok := s.secrets[key]; ok {
		ws.users[use] = true
		if !ws.live {
			// An open watch knows better than a read made before its last event.
			ws.seen = seen
		}
		return
	}
	ctx, cancel := context.WithCancel(s.ctx)
	s.secrets[key] = &watchedSecret{cancel: cancel, users: map[secretUse]bool{use: true}, seen: seen}
	go s.run(ctx, key, w)
}

// Forget stops every watch for syncKey's Sync: it is deleted.
func (s *SecretWatch) Forget(syncKey types.NamespacedName) {
	for _, field := range []string{fieldSourceSecret, fieldVerifySecret, fieldOCISecret, fieldOCIVerifySecret, fieldChartVerifySecret} {
		s.ForgetField(syncKey, field)
	}
	s.ForgetField(syncKey, fieldDecryptionSecret)
	s.ForgetField(syncKey, fieldKubeConfigSecret)
}

// ForgetField stops watching the Secret field of syncKey's Sync named: the
// field names none now.
func (s *SecretWatch) ForgetField(syncKey types.NamespacedName, field string) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	use := secretUse{sync: syncKey, field: field}
	if key, ok := s.syncs[use]; ok {
		s.untrack(use, key)
	}
}

func (s *SecretWatch) untrack(use secretUse, key secretKey) {
	delete(s.syncs, use)
	ws, ok := s.secrets[key]
	if !ok {
		return
	}
	delete(ws.users, use)
	if len(ws.users) == 0 {
		ws.cancel()
		delete(s.secrets, key)
	}
}

// secretRewatch bounds the wait before a failed watch is opened again.
const secretRewatch = time.Minute

// run watches one Secret until ctx ends, re-opening the watch when the API server
// ends it. A Forbidden watch ends it for good: the identity may only get.
func (s *SecretWatch) run(ctx context.Context, key secretKey, w secretWatcher) {
	log := ctrl.LoggerFrom(ctx).WithValues("secret", key.namespace+"/"+key.name, "user", key.user)
	wait := time.Second
	for ctx.Err() == nil {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("SecretList"))
		wi, err := w.Watch(ctx, list, client.InNamespace(key.namespace), client.MatchingFields{"metadata.name": key.name})
		if apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) {
			log.Info("cannot watch the credentials Secret; a change of it is used at the next interval", "cause", err.Error())
			return
		}
		if err != nil {
			log.V(1).Info("watching the credentials Secret failed; trying again", "cause", err.Error(), "in", wait)
			select {
			case <-ctx.Done():
			case <-time.After(wait):
			}
			wait = min(2*wait, secretRewatch)
			continue
		}
		wait = time.Second
		s.setLive(key, true)
		s.follow(key, wi)
		s.setLive(key, false)
	}
}

func (s *SecretWatch) setLive(key secretKey, live bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ws, ok := s.secrets[key]; ok {
		ws.live = live
	}
}

// Holds reports whether the Secret namespace/name, watched as user, is known to
// be at version rv now: its watch is open and brought no other version. A reader
// may then use what it read at rv without reading it again; any change queues it.
func (s *SecretWatch) Holds(user, namespace, name, rv string) bool {
	if s == nil || rv == "" {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ws, ok := s.secrets[secretKey{user: user, namespace: namespace, name: name}]
	return ok && ws.live && ws.seen == rv
}

// follow reads one watch until it ends, queueing the Secret's users on every
// version of it that differs from the one last seen.
func (s *SecretWatch) follow(key secretKey, wi watch.Interface) {
	defer wi.Stop()
	for ev := range wi.ResultChan() {
		var rv string
		switch ev.Type {
		case watch.Added, watch.Modified:
			m, err := meta.Accessor(ev.Object)
			if err != nil {
				continue
			}
			rv = m.GetResourceVersion()
		case watch.Deleted:
		default: // an error ends this watch; run opens another
			return
		}
		s.changed(key, rv)
	}
}

// changed records version rv of the Secret and queues its users if it is new.
func (s *SecretWatch) changed(key secretKey, rv string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ws, ok := s.secrets[key]
	if !ok || ws.seen == rv {
		return
	}
	ws.seen = rv
	for u := range ws.users {
		select {
		case s.events <- event.GenericEvent{Object: &v1alpha1.Sync{ObjectMeta: metav1.ObjectMeta{Namespace: u.sync.Namespace, Name: u.sync.Name}}}:
		default: // the queue is far behind; the next interval reads the Secret anyway
		}
	}
}
