package wall

import (
	"fmt"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/source/render"
	"tether.dev/tether/source/result"
	"tether.dev/tether/source/substitute"
)

// Substitution is a Sync's spec.postBuild as the render wall takes it: the
// variables read (the caller reads them, as the Sync's identity) and how to
// substitute them.
type Substitution struct {
	// Variables are the names and values to substitute.
	Variables map[string]string
	// Strict fails on a variable that is not set and has no default.
	Strict bool
	// FromSecret says that some value came from a Secret: the worker that
	// substitutes then serves no other render.
	FromSecret bool
}

// jobSubstitute is a Substitution as a worker receives it, with the objects
// to substitute into as the render cache keeps them.
type jobSubstitute struct {
	Objects    [][]byte
	Variables  map[string]string
	Strict     bool
	FromSecret bool
}

// Substitute substitutes sub into snap's objects behind the render wall, in a
// worker under opts' limits, as the render of snap ran: the variables may be
// anyone's and a value referred to many times could make gigabytes, so the
// agent does not do it itself (package substitute bounds it too, by a budget).
// The snapshot returned is snap with objects of its own; a failure is a
// *RenderError (SubstitutionFailed) naming the path, never a value.
func Substitute(snap *result.Snapshot, sub Substitution, opts render.Options) (*result.Snapshot, error) {
	held, err := compact(snap.Objects)
	if err != nil {
		return nil, &result.RenderError{File: snap.Path, Reason: v1alpha1.ReasonSubstitutionFailed, Err: fmt.Errorf("spec.postBuild: %w", err)}
	}
	job := &Job{Dir: snap.Path, Opts: opts, Substitute: &jobSubstitute{
		Objects: held, Variables: sub.Variables, Strict: sub.Strict, FromSecret: sub.FromSecret,
	}}
	return runOnObjects(snap, job, opts)
}

// runSubstitute is a worker's substitution: the objects decoded as the
// render cache decodes them, substituted by package substitute.
func runSubstitute(dir string, sub *jobSubstitute) (Rendered, error) {
	objs, err := compactObjects(sub.Objects).decode()
	if err != nil {
		return Rendered{}, &result.RenderError{File: dir, Reason: v1alpha1.ReasonSubstitutionFailed, Err: fmt.Errorf("spec.postBuild: the objects do not read: %w", err)}
	}
	opts := substitute.DefaultOptions()
	opts.Variables, opts.Strict = sub.Variables, sub.Strict
	out, err := substitute.Objects(objs, opts)
	if err != nil {
		return Rendered{}, &result.RenderError{File: dir, Reason: v1alpha1.ReasonSubstitutionFailed, Err: fmt.Errorf("spec.postBuild: %w", err)}
	}
	return Rendered{objs: out}, nil
}
