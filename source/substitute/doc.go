// Package substitute replaces variables in rendered objects as Flux's
// post-build substitution does (spec.postBuild): ${name}, ${name:=default},
// ${name:-default} and the other bash-like forms of Flux's own implementation,
// github.com/fluxcd/pkg/envsubst, which this package uses rather than a parser
// of its own, so that a repository written for Flux renders alike.
//
// It is pure: it takes rendered objects and the variables (the caller reads
// them from the Sync and from ConfigMaps and Secrets, as the Sync's identity)
// and returns new objects; it reads no cluster, no file and no clock, and never
// logs. Objects it returns are its own; the ones it is given are never changed,
// so that a render cache may share them.
//
// For each object, as Flux does: an object labelled or annotated
// kustomize.toolkit.fluxcd.io/substitute: disabled is left as it is; any other
// is written as YAML, its ${...} expressions evaluated, and the result read
// back. An object with no "${" in any key or string is passed through without
// a copy (a walk of its fields, far cheaper than the YAML). In
// strict mode (Options.Strict, Flux's StrictPostBuildSubstitutions) a
// reference to a variable that is not set and that gives no default fails,
// naming the object and the variable; otherwise it becomes the empty string.
//
// Memory is bounded: a variable referred to many times, or an expression that
// grows its value (${v//x/longer}), could turn a small repository and a large
// value into gigabytes. Before an object is evaluated, an upper bound of its
// output is computed from its parsed expressions and the values they refer to,
// and charged to Options.MaxBytes for all the objects of one call; past it the
// call fails (*Error, ErrBudget) before that output is built.
//
// Errors (*Error) name the object and, where there is one, the variable, and
// never hold a value: values may come from Secrets.
package substitute
