package substitute

import (
	"testing"

	"github.com/fluxcd/pkg/envsubst"
)

// FuzzOutputBound checks, for any text a repository may hold, that the bound
// charged before an evaluation is never below what the evaluation produces,
// and that nothing panics.
func FuzzOutputBound(f *testing.F) {
	for _, seed := range []string{
		"${v}", "${v:=d}", "${v//x/yy}", "${v//?/yy}", "${v/#/pre}", "${v^^}", "${v,,}", "${#v}",
		"${v:1:2}", "${u:-${v}}", "$${v}", "${v%%x*}", "${v##*x}", "a: ${v}\nb: ${u:=${v//x/${v}}}\n",
	} {
		f.Add(seed, "xıßx-ǆ")
	}
	f.Fuzz(func(t *testing.T, text, value string) {
		vars := map[string]string{"v": value}
		bound, err := outputBound(text, vars)
		if err != nil {
			return
		}
		out, err := envsubst.Eval(text, func(s string) (string, bool) { return vars[s], true })
		if err != nil {
			return
		}
		if int64(len(out)) > bound {
			t.Fatalf("output of %q is %d bytes, over its bound %d", text, len(out), bound)
		}
	})
}
