package gitcache

import (
	"fmt"
	"io"

	"github.com/go-git/go-git/v5/plumbing"
)

// RawObject returns the content of a commit or an annotated tag object of
// url's cache, as git stores it (what a signature covers, the signature among
// it), when it is at most limit bytes: a signature is checked over the whole
// object, so a larger one is an error, not a part of it. It reads only the
// cache; an object not in it is ErrHistoryUnknown.
func (c *Cache) RawObject(url string, kind plumbing.ObjectType, hash string, limit int64) ([]byte, error) {
	e := c.entry(url)
	e.mu.Lock()
	defer e.mu.Unlock()
	repo, err := c.openCache(e, url)
	if err != nil {
		return nil, err
	}
	obj, err := repo.Storer.EncodedObject(kind, plumbing.NewHash(hash))
	if err != nil {
		return nil, fmt.Errorf("%w: %s %s", ErrHistoryUnknown, kind, hash)
	}
	if obj.Size() > limit {
		return nil, fmt.Errorf("the %s object %s is %d bytes, over the %d a signature is checked in", kind, hash, obj.Size(), limit)
	}
	rd, err := obj.Reader()
	if err != nil {
		return nil, fmt.Errorf("reading %s %s: %w", kind, hash, err)
	}
	defer func() { _ = rd.Close() }()
	raw, err := io.ReadAll(io.LimitReader(rd, limit+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s %s: %w", kind, hash, err)
	}
	if int64(len(raw)) > limit {
		return nil, fmt.Errorf("the %s object %s is over the %d bytes a signature is checked in", kind, hash, limit)
	}
	return raw, nil
}
