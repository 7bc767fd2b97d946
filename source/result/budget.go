package result

import "fmt"

// OverBudget is the error of a render (or of what feeds one: a chart
// repository's index) over one of its bounds in bytes or nodes; a RenderError
// caused by one is classed RenderLimitExceeded.
type OverBudget struct{ msg string }

func (e *OverBudget) Error() string { return e.msg }

// OverBudgetf returns an *OverBudget saying, as fmt.Sprintf, which bound.
func OverBudgetf(format string, args ...any) error {
	return &OverBudget{msg: fmt.Sprintf(format, args...)}
}
