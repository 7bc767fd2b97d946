// Package docs checks that the documentation points at what exists: every
// relative link of README.md and docs/*.md names a file or directory of the
// repository, and every repository path such a file names in code spans
// (`deploy/chart/values.yaml`, `hack/imagegen`) exists. It has no code of its
// own; its test reads the Markdown files.
package docs
