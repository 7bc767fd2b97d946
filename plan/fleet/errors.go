package fleet

import "fmt"

// Error is a SyncSet that cannot make its Syncs: bad input in the SyncSet or in
// git, which a retry cannot fix. Entry names the generator entry ("generators[0]
// git directory apps/web") and Reason is one of api/v1alpha1's reasons
// (GenerateFailed, ParameterRefused).
type Error struct {
	Entry  string
	Reason string
	Err    error
}

func (e *Error) Error() string {
	if e.Entry == "" {
		return e.Err.Error()
	}
	return fmt.Sprintf("%s: %v", e.Entry, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }
