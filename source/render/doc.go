// Package render is the room of source where a repository's files become
// objects. It is handed what one render reads, never a repository: an
// in-memory file system (FS) that source's copier filled with the files of a
// commit the path needs (or of a directory on disk, for the CLI), or a chart
// package's bytes, and the render's bounds (Options, the render fields of
// source.Options). It knows no git, no cache and no worker: source copies,
// schedules and caches, and every render runs in a worker of the render wall
// (source/wall), which calls this package.
//
// Data flows one way, within budgets counted as it goes:
//
//	FS, dir, Options → Path (plain or kustomize) or Chart (Helm) → objects (*result.RenderError)
//
// A plain directory (dir.go) yields its manifest files recursively, leaving
// out hidden files and documents that are no Kubernetes object, and builds
// each subdirectory holding a kustomization as one; a directory's files may be
// selected (select.go: Argo CD's directory options). A kustomization
// (kustomize.go) is built in process by krusty, plugins and Helm off, the
// load restrictor on, after every kustomization and plugin configuration it
// could read is checked for URLs (ErrRemoteReference); the process's network
// is closed besides (network.go, IsolateRendering, which main and every
// worker call). A path holding a Chart.yaml renders as Helm's template would
// (helm*.go): Helm's loader, values and engine in process, every template
// function charged to a budget (helm_guard.go, helm_tpl.go), vendored
// archives and packages unpacked within the chart's bounds (helm_archives.go,
// helm_unpack.go). Helm lives here and not in a room of its own because it
// renders through the same budgets, decoder, file system and redaction as a
// directory does; a room below this one would take all of them with it.
//
// Every YAML file a render reads is bounded in nodes from its text before a
// parser sees it (YAMLNodeBound, yaml_count.go; budget.go), then decoded within
// a byte budget that counts what aliases expand to (yaml.go), and the output
// is bounded in bytes and objects: over a bound the render fails with
// ReasonRenderLimitExceeded, naming the file. Chart repositories
// (source/chartrepo) bound an index's parts with YAMLNodeBound as rendering
// bounds files.
//
// A render may decrypt SOPS files (decrypt.go): every file it reads then
// passes through a file system that opens a file carrying SOPS's metadata
// with source/sops and the Sync's keys only, and no message leaves with a
// decrypted value in it (decrypt_rendered.go checks what a render made when a
// Sync requires encryption).
package render
