package source_test

import (
	"fmt"
	"os"
	"testing"
	"time"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/source"
	"tether.dev/tether/source/verify"
	"tether.dev/tether/test/gitserver"
	"tether.dev/tether/test/signing"
)

// BenchmarkVerifiedPoll measures what spec.source.verify adds to the poll of a
// converged Sync, against the same poll without it in the same run: a Fetch
// answered from the cache (a listing younger than MaxAge), whose verdict is
// kept, and apart the first verification of the commit (reading the object,
// checking the signature) and the reading of the keys Secret's values
// (verify.ParseKeys), which the reconciler does once per version of the
// Secret. The commit is signed by the real git, once with gpg
// (ed25519) and once with an SSH key (ed25519); the Secret holds both keys.
func BenchmarkVerifiedPoll(b *testing.B) {
	const polls = 2000
	repo := gitserver.Start(b, gitserver.Options{}).CreateRepo(b, "signed")
	alice := signing.NewGPG(b, "Alice", "alice@example.com")
	ci := signing.NewSSH(b, "ci@example.com")
	data := map[string][]byte{"alice.asc": alice.Public, "allowed_signers": []byte(ci.AllowedSigners())}
	keys, err := verify.ParseKeys(data)
	if err != nil {
		b.Fatal(err)
	}
	repo.SetEnv(alice.Env()...)
	src := newBenchSource(b)
	plain := source.Request{URL: repo.URL(), Ref: v1alpha1.GitRef{Branch: "main"}, MaxAge: time.Hour}
	verified := plain
	verified.Verify = &source.Verification{Keys: keys}
	mean := func(n int, work func()) time.Duration {
		start := time.Now()
		for range n {
			work()
		}
		return time.Since(start) / time.Duration(n)
	}
	for b.Loop() {
		fmt.Fprintf(os.Stdout, "\none poll of a converged Sync (a Fetch answered from the cache, mean of %d), without and with spec.source.verify:\n", polls)
		fmt.Fprintf(os.Stdout, "  %-8s %12s %12s %10s %18s %12s\n", "signed", "unverified", "verified", "ratio", "first verification", "ParseKeys")
		for _, signer := range []struct {
			name   string
			config map[string]string
		}{{"gpg", alice.GitConfig()}, {"ssh", ci.GitConfig()}} {
			repo.Configure(b, signer.config)
			repo.Commit(b, map[string]string{"apps/cm.yaml": configMap("web", signer.name)}, "signed with "+signer.name)
			src.Refresh(repo.URL())
			benchFetch(b, src, plain)
			first := mean(1, func() {
				if rev, err := src.Fetch(b.Context(), verified); err != nil || rev.Signer == "" {
					b.Fatalf("%s: %v (signer %q)", signer.name, err, rev.Signer)
				}
			})
			without := mean(polls, func() { benchFetch(b, src, plain) })
			with := mean(polls, func() { benchFetch(b, src, verified) })
			parse := mean(polls/10, func() {
				if _, err := verify.ParseKeys(data); err != nil {
					b.Fatal(err)
				}
			})
			fmt.Fprintf(os.Stdout, "  %-8s %12s %12s %9.2f× %18s %12s\n", signer.name, without, with, float64(with)/float64(without), first, parse)
			b.ReportMetric(float64(with)/float64(without), "verified/unverified-"+signer.name)
		}
	}
}
