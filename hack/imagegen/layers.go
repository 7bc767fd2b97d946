package main

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"encoding/pem"
	"fmt"
	"io"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"golang.org/x/crypto/x509roots/fallback/bundle"
)

// caFile is where Go's crypto/x509 (and most other TLS stacks) look for roots on
// Linux; the image's environment names it too (SSL_CERT_FILE).
const caFile = "/etc/ssl/certs/ca-certificates.crt"

// entry is one file or directory of a layer.
type entry struct {
	name     string // without a leading slash
	mode     int64
	uid, gid int
	dir      bool
	data     []byte
}

// baseLayer is what a distroless "static" base gives a Go binary, made here: the
// CA roots, the users, a writable /tmp (the Deployment mounts an emptyDir there)
// and the non-root user's home.
func baseLayer(created time.Time) (v1.Layer, error) {
	roots, err := caCertificates()
	if err != nil {
		return nil, err
	}
	return layer(created, []entry{
		{name: "etc/", mode: 0o755, dir: true},
		{name: "etc/group", mode: 0o644, data: []byte("root:x:0:\nnonroot:x:65532:\n")},
		{name: "etc/nsswitch.conf", mode: 0o644, data: []byte("hosts: files dns\n")},
		{name: "etc/passwd", mode: 0o644, data: []byte("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n")},
		{name: "etc/ssl/", mode: 0o755, dir: true},
		{name: "etc/ssl/certs/", mode: 0o755, dir: true},
		{name: "etc/ssl/certs/ca-certificates.crt", mode: 0o644, data: roots},
		{name: "home/", mode: 0o755, dir: true},
		{name: "home/nonroot/", mode: 0o700, uid: 65532, gid: 65532, dir: true},
		{name: "root/", mode: 0o700, dir: true},
		{name: "tmp/", mode: 0o1777, dir: true},
	})
}

// binaryLayer holds the tether binary at binaryPath.
func binaryLayer(bin []byte, created time.Time) (v1.Layer, error) {
	return layer(created, []entry{
		{name: "usr/", mode: 0o755, dir: true},
		{name: "usr/local/", mode: 0o755, dir: true},
		{name: "usr/local/bin/", mode: 0o755, dir: true},
		{name: binaryPath[1:], mode: 0o755, data: bin},
	})
}

// caCertificates is the PEM bundle of the Mozilla (NSS) roots that the pinned
// x509roots/fallback module carries. Roots with a distrust-after constraint are
// left out: a PEM file cannot say "trusted only for certificates issued before",
// and Debian's ca-certificates leaves them out for the same reason.
func caCertificates() ([]byte, error) {
	var b bytes.Buffer
	n := 0
	for root := range bundle.Roots() {
		if root.Constraint != nil {
			continue
		}
		if err := pem.Encode(&b, &pem.Block{Type: "CERTIFICATE", Bytes: root.Certificate}); err != nil {
			return nil, err
		}
		n++
	}
	if n == 0 {
		return nil, fmt.Errorf("the CA bundle holds no unconstrained root")
	}
	return b.Bytes(), nil
}

// layer writes entries, in the order given, as a gzipped tar with every time set
// to created and every owner numeric, so that equal inputs give equal digests.
func layer(created time.Time, entries []entry) (v1.Layer, error) {
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: e.mode, Uid: e.uid, Gid: e.gid, ModTime: created, Format: tar.FormatPAX, Typeflag: tar.TypeReg, Size: int64(len(e.data))}
		if e.dir {
			h.Typeflag, h.Size = tar.TypeDir, 0
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	data := b.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	}, tarball.WithMediaType(types.OCILayer))
}

// elfMachines maps an image architecture to the ELF machine its binary is for.
var elfMachines = map[string]elf.Machine{
	"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64, "arm": elf.EM_ARM,
	"ppc64le": elf.EM_PPC64, "s390x": elf.EM_S390, "riscv64": elf.EM_RISCV,
}

// checkBinary refuses a binary the image could not run: not ELF (the image is
// Linux), for another architecture, or dynamically linked (the base has no libc).
func checkBinary(bin []byte, p platformBinary) error {
	if p.os != "linux" {
		return fmt.Errorf("%s: only linux images can be built", p.binary)
	}
	f, err := elf.NewFile(bytes.NewReader(bin))
	if err != nil {
		return fmt.Errorf("%s is not a Linux binary: %w", p.binary, err)
	}
	defer f.Close()
	if want, ok := elfMachines[p.arch]; !ok || f.Machine != want {
		return fmt.Errorf("%s is built for %v, not %s", p.binary, f.Machine, p.arch)
	}
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP {
			return fmt.Errorf("%s is dynamically linked; build it with CGO_ENABLED=0", p.binary)
		}
	}
	return nil
}
