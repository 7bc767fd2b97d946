// Package render is the room of source where a repository's files become
// objects. For now it holds its pure leaf, YAMLNodeBound: a bound, from a
// file's text alone and in one pass, of the YAML nodes a parser would build
// from it, so that a file is refused before the parser spends memory on it
// (yaml_count.go). Chart repositories (source/chartrepo) bound an index's parts
// with it as rendering bounds files.
//
// The rest of rendering (plain YAML and kustomize, the in-memory file system,
// the budgets, the render worker behind the wall, Helm charts) is still in
// source (render*.go) and moves here next, split from the Source that holds
// the git cache.
package render
