package oci

import (
	"context"
	"errors"
)

// errEnough stops oras-go's walk over a tag list at a bound of ours.
var errEnough = errors.New("enough")

// Tags lists repo's tags, every page of the list (oras-go follows the
// registry's Link headers; guard keeps them on the registry), within
// Options.MaxTags, MaxTagPages, and MaxTagListBytes for all pages together.
func (c *Client) Tags(ctx context.Context, repo Repository, creds Credentials) ([]string, error) {
	what := "the tag list of " + repo.Path
	call, err := c.start(ctx, repo, creds, c.opts.MaxTagListBytes)
	if err != nil {
		return nil, err
	}
	defer call.done()
	call.guard.tagBytes, call.guard.maxPages, call.guard.tagsLeft = c.opts.MaxTagListBytes, c.opts.MaxTagPages, c.opts.MaxTags
	var tags []string
	tooMany := false
	err = call.repo.Tags(call.ctx, "", func(page []string) error {
		if len(tags)+len(page) > c.opts.MaxTags {
			tooMany = true
			return errEnough
		}
		tags = append(tags, page...)
		call.guard.tagsLeft = c.opts.MaxTags - len(tags)
		return nil
	})
	switch {
	case tooMany, errors.Is(err, errTooManyTags):
		return nil, limitError("%s holds more than %d tags, the limit", what, c.opts.MaxTags)
	case call.guard.overBytes && call.guard.tagPages > 1:
		return nil, limitError("%s is over the limit of %d bytes in its %d pages", what, c.opts.MaxTagListBytes, call.guard.tagPages)
	case call.guard.overBytes:
		return nil, limitError("%s is over the limit of %d bytes", what, c.opts.MaxTagListBytes)
	case errors.Is(err, errTooManyPages):
		return nil, limitError("%s is over %d pages, the limit", what, c.opts.MaxTagPages)
	case err != nil:
		return nil, wrap(what, err)
	}
	return tags, nil
}
