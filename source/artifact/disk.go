package artifact

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	gosync "sync"
	"time"

	"tether.dev/tether/source/result"
)

// tempPrefix names the directories a layer is unpacked into before it is
// renamed under its digest.
const tempPrefix = ".unpack-"

// layerName is the name of an unpacked layer's directory: its digest's hex.
var layerName = regexp.MustCompile(`^[0-9a-f]{64}$`)

// disk keeps account of the unpacked layers under dir: their sizes and last
// use, within maxBytes, and the downloads running, which callers of one
// digest join.
type disk struct {
	dir      string
	maxBytes int64

	mu      gosync.Mutex
	layers  map[string]*layer
	bytes   int64
	running map[string]*download
	// refusals are the RenderErrors of layers that could not be unpacked
	// (over a bound, a link, not a tar), by name, within maxRefusals.
	refusals map[string]error
}

// maxRefusals bounds the refusals kept; past it they are forgotten at once.
const maxRefusals = 1024

type layer struct {
	size int64
	used time.Time
}

type download struct {
	done chan struct{}
	err  error
}

// openDisk reads what dir holds: layers unpacked by an earlier agent are
// kept (and counted), temporary directories of unpacks it did not finish are
// removed.
func openDisk(dir string, maxBytes int64) (*disk, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	d := &disk{dir: dir, maxBytes: maxBytes, layers: map[string]*layer{}, running: map[string]*download{}, refusals: map[string]error{}}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		switch {
		case strings.HasPrefix(e.Name(), tempPrefix):
			_ = os.RemoveAll(p)
		case e.IsDir() && layerName.MatchString(e.Name()):
			info, _ := e.Info()
			used := time.Now()
			if info != nil {
				used = info.ModTime()
			}
			size := sizeOf(p)
			d.layers[e.Name()] = &layer{size: size, used: used}
			d.bytes += size
		}
	}
	return d, nil
}

func sizeOf(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, e fs.DirEntry, err error) error {
		if err == nil && e.Type().IsRegular() {
			if info, err := e.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}

// use reports the directory of layer name, marking it used; ok is false when
// it is not unpacked.
func (d *disk) use(name string) (string, bool) {
	if !layerName.MatchString(name) {
		return "", false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	l, ok := d.layers[name]
	if !ok {
		return "", false
	}
	l.used = time.Now()
	return filepath.Join(d.dir, name), true
}

// refused is why layer name could not be unpacked, if it could not.
func (d *disk) refused(name string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.refusals[name]
}

// begin starts the download of name, or joins the one running (leader false).
func (d *disk) begin(name string) (*download, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if c, ok := d.running[name]; ok {
		return c, false
	}
	c := &download{done: make(chan struct{})}
	d.running[name] = c
	return c, true
}

// end records the download of name: on success its size, after which the
// least recently used other layers are removed until the total fits.
func (d *disk) end(name string, c *download, size int64, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.running, name)
	c.err = err
	close(c.done)
	var re *result.RenderError
	if errors.As(err, &re) {
		if len(d.refusals) >= maxRefusals {
			clear(d.refusals)
		}
		d.refusals[name] = err
	}
	if err != nil {
		return
	}
	d.layers[name] = &layer{size: size, used: time.Now()}
	d.bytes += size
	for d.maxBytes > 0 && d.bytes > d.maxBytes {
		oldest := ""
		for n, l := range d.layers {
			if n != name && (oldest == "" || l.used.Before(d.layers[oldest].used)) {
				oldest = n
			}
		}
		if oldest == "" {
			return
		}
		d.bytes -= d.layers[oldest].size
		delete(d.layers, oldest)
		_ = os.RemoveAll(filepath.Join(d.dir, oldest))
	}
}
