package contract

import (
	"encoding/json"
	"fmt"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

// Object is a live object as a Change holds it: its JSON, without managedFields,
// decoded anew for each reader. Decoded (maps of maps), an object takes several
// times the bytes of its JSON, and a ChangeSet of a revision holds one per object
// until the caller has judged them all: kept decoded, the live objects of a first
// sync were the largest part of the agent's heap at its peak. The verified cache
// keeps the same bytes, so an object applied or verified is held once.
//
// An Object is immutable: Decode returns a copy the caller may change. It stands
// for one version of the live object: the verified cache hands out the same
// Object until the object changes, so a reader may note on it what it concluded
// from that version (Note).
type Object struct {
	data []byte
	uid  types.UID
	note atomic.Value
}

// NewObject returns obj as an Object, without its managedFields. It fails only
// when obj does not encode as JSON (a value that is not one of JSON's).
func NewObject(obj *unstructured.Unstructured) (*Object, error) {
	data, err := json.Marshal(WithoutManagedFields(obj).Object)
	if err != nil {
		return nil, fmt.Errorf("encoding %s %s: %w", obj.GetKind(), obj.GetName(), err)
	}
	return &Object{data: data, uid: obj.GetUID()}, nil
}

// Decode returns the object, decoded anew: the caller may change it. Numbers
// decode as the API server's answers do (integers as int64).
func (o *Object) Decode() (*unstructured.Unstructured, error) {
	out := &unstructured.Unstructured{}
	if err := out.UnmarshalJSON(o.data); err != nil {
		return nil, fmt.Errorf("decoding a live object: %w", err)
	}
	return out, nil
}

// Note returns what SetNote last left on the Object, or nil. A reader keeps there
// what it concluded from the object alone (sync: a Healthy verdict), so that the
// next reconcile that meets the same version need not decode it again.
func (o *Object) Note() any { return o.note.Load() }

// SetNote leaves v on the Object for Note; v is always of one type (sync's).
func (o *Object) SetNote(v any) { o.note.Store(v) }

// UID is the object's UID, read without decoding it.
func (o *Object) UID() types.UID { return o.uid }

// ObjectFromJSON returns data as an Object of the given UID. data must be the
// object's JSON without managedFields (apply reads it so from the API server's
// answer); the Object keeps it, and the caller must not change it after.
func ObjectFromJSON(data []byte, uid types.UID) *Object {
	return &Object{data: data, uid: uid}
}

// JSON returns the object's JSON, without managedFields. The caller must not
// change it.
func (o *Object) JSON() []byte { return o.data }

// Size is what the Object's JSON takes: what a cache of Objects counts.
func (o *Object) Size() int64 { return int64(len(o.data)) }
