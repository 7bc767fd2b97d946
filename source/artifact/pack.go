package artifact

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"tether.dev/tether/source/oci"
)

// Pack makes the content layer of an artifact of dir, as flux push artifact
// does: a gzipped tar of its files and directories (named relative to dir,
// in name order, a .git directory left out), each file of mode 0644 and
// every time and owner zeroed, so that the same files make the same layer
// and digest wherever and whenever they are packed. A symlink or any other
// file that is not regular is refused, naming it: the agent would refuse it
// too.
func Pack(dir string) ([]byte, error) {
	var names []string
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil || rel == "." {
			return err
		}
		switch {
		case e.IsDir() && e.Name() == ".git":
			return filepath.SkipDir
		case e.IsDir(), e.Type().IsRegular():
			names = append(names, rel)
			return nil
		}
		return fmt.Errorf("%s is not a regular file nor a directory; an artifact holds files and directories only", rel)
	})
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, rel := range names {
		p := filepath.Join(dir, rel)
		info, err := os.Lstat(p)
		if err != nil {
			return nil, err
		}
		h := &tar.Header{Name: filepath.ToSlash(rel), Mode: 0o644, ModTime: time.Unix(0, 0), Format: tar.FormatPAX, Typeflag: tar.TypeReg, Size: info.Size()}
		if info.IsDir() {
			h.Name, h.Mode, h.Typeflag, h.Size = h.Name+"/", 0o755, tar.TypeDir, 0
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if info.IsDir() {
			continue
		}
		if err := copyFile(tw, p, info.Size()); err != nil {
			return nil, fmt.Errorf("%s: %w", rel, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := gz.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func copyFile(w io.Writer, p string, size int64) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	n, err := io.Copy(w, io.LimitReader(f, size))
	if err == nil && n != size {
		err = fmt.Errorf("changed while it was packed")
	}
	return err
}

// Push pushes layer (Pack's) to repo as Flux's artifact format: Flux's config
// media type, the layer of Flux's content media type, and annotations (the
// OCI image spec's source, revision and created, as the caller gives them),
// tagged with each of tags. It returns the manifest's descriptor.
func Push(ctx context.Context, client *oci.Client, repo oci.Repository, creds oci.Credentials, layer []byte, annotations map[string]string, tags ...string) (ocispec.Descriptor, error) {
	config, err := client.PushBlob(ctx, repo, creds, FluxConfigType, []byte("{}"))
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	content, err := client.PushBlob(ctx, repo, creds, FluxContentType, layer)
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	manifest := ocispec.Manifest{
		MediaType:   ocispec.MediaTypeImageManifest,
		Config:      config,
		Layers:      []ocispec.Descriptor{content},
		Annotations: annotations,
	}
	manifest.SchemaVersion = 2
	data, err := json.Marshal(manifest)
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	return client.PushManifest(ctx, repo, creds, ocispec.MediaTypeImageManifest, data, tags...)
}
