package render

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"testing"
)

// tgz is a gzipped tar of regular files.
func tgz(t testing.TB, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for name, content := range files {
		if err := tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(content))}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(content)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// FuzzUnpackChart feeds UnpackChart packages (and bytes that are none): it
// must fail or give a file system holding a chart, within its bounds.
func FuzzUnpackChart(f *testing.F) {
	f.Add(tgz(f, map[string]string{"web/Chart.yaml": "apiVersion: v2\nname: web\nversion: 1.0.0\n", "web/templates/cm.yaml": "kind: ConfigMap\n"}))
	f.Add(tgz(f, map[string]string{"web/../../x": "x", "Chart.yaml": "x"}))
	f.Add([]byte("not a package"))
	opts := Options{MaxChartFiles: 20, MaxFileSize: 1 << 16, MaxTreeSize: 1 << 18}
	f.Fuzz(func(t *testing.T, data []byte) {
		fs, err := UnpackChart(data, "web@1.0.0", opts)
		if err != nil {
			return
		}
		if !IsChart(fs, "/web@1.0.0") {
			t.Error("unpacked without a Chart.yaml")
		}
		total := 0
		for name, content := range fs.files {
			if len(name) < len("/web@1.0.0/") || name[:len("/web@1.0.0/")] != "/web@1.0.0/" {
				t.Errorf("%q is outside the chart's directory", name)
			}
			total += len(content)
		}
		if len(fs.files) > opts.MaxChartFiles || int64(total) > opts.MaxTreeSize {
			t.Errorf("%d files, %d bytes: over the bounds", len(fs.files), total)
		}
	})
}
