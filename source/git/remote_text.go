package git

import (
	"errors"
	"fmt"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/format/pktline"
)

// sideBandError is how go-git begins the error it makes of a message a git host
// sends on the protocol's error channel (side-band 3).
const sideBandError = "unexpected error: "

// HostMessageError stands for a message a git host wrote into the git
// conversation itself (an "ERR" line, a message on the error channel) to end it.
// Like an HTTP error body it is the host's text, not ours: a hostile or merely
// internal host could put anything there (an internal address, a token), so
// errors, conditions, Events and logs say that it came and how long it was,
// never what it said.
type HostMessageError struct {
	// Size is the length of the host's message, in bytes.
	Size int
}

func (e *HostMessageError) Error() string {
	return fmt.Sprintf("the git host ended the conversation with a message of its own (%d bytes, not shown: hosts' words are never quoted)", e.Size)
}

// WithoutHostText returns err, or, if a git host's own message is in err's chain
// (gitCauses), a HostMessageError in its place.
func WithoutHostText(err error) error {
	for e := range gitCauses(err) {
		var line *pktline.ErrorLine
		if errors.As(e, &line) {
			return &HostMessageError{Size: len(line.Text)}
		}
		if msg := e.Error(); strings.HasPrefix(msg, sideBandError) {
			return &HostMessageError{Size: len(msg) - len(sideBandError)}
		}
	}
	return err
}
