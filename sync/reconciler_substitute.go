package sync

// Post-build variable substitution (spec.postBuild, Flux's shape). The render
// path calls into it in ONE place: renderAgain hands every rendered snapshot
// to Reconciler.postBuild, which reads the variables as the Sync's identity
// and has the source substitute them behind the render wall (a worker process
// runs source/substitute on the snapshot's objects, as renders run there).

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/source"
)

// postBuild substitutes obj's spec.postBuild variables into snap's objects,
// the variables read as the Sync's identity (id.Secrets reads straight from
// the API server: no ConfigMap or Secret is cached). A Sync without
// postBuild gets snap back as it is.
func (r *Reconciler) postBuild(ctx context.Context, obj *v1alpha1.Sync, id Identity, snap *source.Snapshot) (*source.Snapshot, error) {
	return Substitute(ctx, id.Secrets, obj, snap, r.Agent.Source.Substitute)
}

// Substituter substitutes variables into a snapshot's objects behind the
// render wall: Source.Substitute, or source.Substitute with the caller's
// limits.
type Substituter func(snap *source.Snapshot, sub source.Substitution) (*source.Snapshot, error)

// Substitute substitutes obj's spec.postBuild variables into snap's objects,
// as Flux's post-build substitution does, the variables of substituteFrom
// read through reader (whoever should read them: the Sync's identity in the
// agent, the user in the CLI), and returns a snapshot of its own. As in Flux,
// nothing is substituted unless postBuild names a variable or an object to
// read them from. A failure to read is a *source.FetchError (VariablesNotFound,
// Forbidden); a failure to substitute a *source.RenderError
// (SubstitutionFailed) naming the object and the variable, never a value.
// wall substitutes, in a render worker.
func Substitute(ctx context.Context, reader client.Reader, obj *v1alpha1.Sync, snap *source.Snapshot, wall Substituter) (*source.Snapshot, error) {
	pb := obj.Spec.PostBuild
	if pb == nil || (len(pb.Substitute) == 0 && len(pb.SubstituteFrom) == 0) {
		return snap, nil
	}
	sub, err := readVariables(ctx, reader, obj.Namespace, pb)
	if err != nil {
		return nil, &source.FetchError{URL: sourceURL(obj), Ref: sourceRefLabel(obj), Reason: variablesReason(err), Err: err}
	}
	sub.Strict = pb.Strict
	return wall(snap, sub)
}

// readVariables reads the variables of pb through reader: those of each
// substituteFrom object in order, a later one overriding an earlier one, then
// pb.Substitute over them all. As in Flux, new lines are taken out of every
// value. Errors name the object, never what it holds.
func readVariables(ctx context.Context, reader client.Reader, namespace string, pb *v1alpha1.PostBuild) (source.Substitution, error) {
	sub := source.Substitution{Variables: map[string]string{}}
	for _, ref := range pb.SubstituteFrom {
		data, err := readVariablesFrom(ctx, reader, namespace, ref)
		if err != nil {
			return source.Substitution{}, err
		}
		if ref.Kind == "Secret" && len(data) > 0 {
			sub.FromSecret = true
		}
		for k, v := range data {
			sub.Variables[k] = strings.ReplaceAll(v, "\n", "")
		}
	}
	for k, v := range pb.Substitute {
		sub.Variables[k] = strings.ReplaceAll(v, "\n", "")
	}
	return sub, nil
}

// readVariablesFrom reads the keys of one substituteFrom object; nothing for
// an optional one that does not exist.
func readVariablesFrom(ctx context.Context, reader client.Reader, namespace string, ref v1alpha1.SubstituteReference) (map[string]string, error) {
	name := fmt.Sprintf("%s %s/%s", ref.Kind, namespace, ref.Name)
	if reader == nil {
		return nil, fmt.Errorf("spec.postBuild.substituteFrom: this agent reads no ConfigMaps or Secrets: %w", errors.New(name))
	}
	key := client.ObjectKey{Namespace: namespace, Name: ref.Name}
	var obj client.Object = &corev1.ConfigMap{}
	if ref.Kind == "Secret" {
		obj = &corev1.Secret{}
	}
	err := reader.Get(ctx, key, obj)
	switch {
	case apierrors.IsNotFound(err) && ref.Optional:
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("spec.postBuild.substituteFrom: reading %s: %w", name, err)
	}
	if s, ok := obj.(*corev1.Secret); ok {
		data := make(map[string]string, len(s.Data)+len(s.StringData))
		for k, v := range s.Data {
			data[k] = string(v)
		}
		return data, nil
	}
	return obj.(*corev1.ConfigMap).Data, nil
}

// variablesReason classes the failure to read a substituteFrom object:
// Forbidden when the Sync's identity may not read it, else
// VariablesNotFound.
func variablesReason(err error) string {
	if apierrors.IsForbidden(err) {
		return v1alpha1.ReasonForbidden
	}
	return v1alpha1.ReasonVariablesNotFound
}
