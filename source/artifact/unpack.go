package artifact

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/source/oci"
	"tether.dev/tether/source/result"
)

// sha256Digest is the one digest form unpacked layers are named by.
var sha256Digest = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// unpack downloads layer and unpacks it under its digest, unless it is there
// already; callers of one digest at once share one download.
func (s *Store) unpack(ctx context.Context, repo oci.Repository, req Request, layer ocispec.Descriptor) error {
	if !sha256Digest.MatchString(layer.Digest.String()) {
		return &result.FetchError{URL: req.URL, Ref: req.Label(), Reason: v1alpha1.ReasonRegistryFailed,
			Err: fmt.Errorf("the artifact's layer has the digest %.100q; a sha256: digest is expected", layer.Digest.String())}
	}
	name := hexOf(layer.Digest.String())
	for {
		if _, ok := s.disk.use(name); ok {
			return nil
		}
		if err := s.disk.refused(name); err != nil {
			// A layer's content never changes: one that cannot be unpacked
			// is not downloaded again at every poll.
			return err
		}
		call, leader := s.disk.begin(name)
		if !leader {
			select {
			case <-call.done:
				if call.err != nil {
					return call.err
				}
				continue
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		size, err := s.download(ctx, repo, req, layer, name)
		s.disk.end(name, call, size, err)
		return err
	}
}

// download reads layer within MaxLayerBytes and unpacks it into a directory
// of its own, renamed into place whole: a crash leaves a temporary directory
// (removed at the next start), never half an artifact under its digest.
func (s *Store) download(ctx context.Context, repo oci.Repository, req Request, layer ocispec.Descriptor, name string) (int64, error) {
	data, err := s.client.Blob(ctx, repo, req.Credentials, layer, s.opts.MaxLayerBytes)
	if err != nil {
		return 0, err
	}
	tmp, err := os.MkdirTemp(s.opts.Dir, tempPrefix)
	if err != nil {
		return 0, err
	}
	size, err := untar(data, tmp, s.opts, "artifact layer "+layer.Digest.String())
	if err == nil {
		err = os.Rename(tmp, filepath.Join(s.opts.Dir, name))
	}
	if err != nil {
		_ = os.RemoveAll(tmp)
		return 0, err
	}
	return size, nil
}

// untar writes the files of a tar (gzipped or not) under dir, within opts'
// bounds counted as it reads: MaxTreeEntries entries, MaxFileSize per file,
// MaxTreeSize in all. Names are cleaned ("./a.yaml" is a.yaml); a name
// leaving the directory, a link, a device or a name written twice is refused.
// Errors are RenderErrors naming label and the entry, never its content.
func untar(data []byte, dir string, opts Options, label string) (int64, error) {
	fail := func(reason string, err error) (int64, error) {
		return 0, &result.RenderError{File: label, Reason: reason, Err: err}
	}
	var r io.Reader = bytes.NewReader(data)
	if len(data) >= 2 && data[0] == 0x1f && data[1] == 0x8b {
		gz, err := gzip.NewReader(r)
		if err != nil {
			return fail("", fmt.Errorf("not a gzipped tar: %w", err))
		}
		defer func() { _ = gz.Close() }()
		r = bufio.NewReader(gz)
	}
	tr := tar.NewReader(r)
	var entries int
	var total int64
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fail("", fmt.Errorf("not a tar: %w", err))
		}
		if h.Typeflag == tar.TypeXGlobalHeader {
			continue
		}
		if entries++; entries > opts.MaxTreeEntries {
			return fail(v1alpha1.ReasonRenderLimitExceeded, fmt.Errorf("it holds more than %d entries, the limit", opts.MaxTreeEntries))
		}
		name, err := entryName(h.Name)
		if err != nil {
			return fail("", err)
		}
		if name == "" {
			continue
		}
		target := filepath.Join(dir, filepath.FromSlash(name))
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o700); err != nil {
				return fail("", fmt.Errorf("%.200s: %w", name, errors.Unwrap(err)))
			}
			continue
		case tar.TypeReg:
		case tar.TypeSymlink, tar.TypeLink:
			return fail("", fmt.Errorf("%.200s is a link; an artifact holds files and directories only", name))
		default:
			return fail("", fmt.Errorf("%.200s is not a file (tar type %q); an artifact holds files and directories only", name, h.Typeflag))
		}
		if h.Size > opts.MaxFileSize {
			return fail(v1alpha1.ReasonRenderLimitExceeded, fmt.Errorf("%.200s is %d bytes, over the limit of %d per file", name, h.Size, opts.MaxFileSize))
		}
		if total += h.Size; total > opts.MaxTreeSize {
			return fail(v1alpha1.ReasonRenderLimitExceeded, fmt.Errorf("it unpacks to more than %d bytes, the limit", opts.MaxTreeSize))
		}
		if err := writeEntry(target, tr, h.Size); err != nil {
			return fail("", fmt.Errorf("%.200s: %w", name, err))
		}
	}
	return total, nil
}

// entryName is a tar entry's name cleaned, relative to the artifact's root:
// "" for the root itself; an error for a name that leaves it.
func entryName(raw string) (string, error) {
	name := path.Clean(strings.TrimPrefix(strings.ReplaceAll(raw, "\\", "/"), "./"))
	switch {
	case name == "." || name == "/":
		return "", nil
	case path.IsAbs(name), name == "..", strings.HasPrefix(name, "../"):
		return "", fmt.Errorf("the entry %.200q leaves the artifact's directory", raw)
	case name == ".git" || strings.HasPrefix(name, ".git/"):
		// A commit's .git is never read; neither is an artifact's.
		return "", nil
	}
	return name, nil
}

// writeEntry writes size bytes of r to a new file at target.
func writeEntry(target string, r io.Reader, size int64) error {
	if err := os.MkdirAll(filepath.Dir(target), 0o700); err != nil {
		return errors.Unwrap(err)
	}
	f, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		return errors.New("written twice in the tar")
	}
	if err != nil {
		return errors.Unwrap(err)
	}
	n, err := io.Copy(f, io.LimitReader(r, size))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && n != size {
		err = io.ErrUnexpectedEOF
	}
	return err
}
