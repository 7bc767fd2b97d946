package verify

import (
	"strings"
	"testing"
)

func TestSSHAllowedSigners(t *testing.T) {
	t.Parallel()
	k := kit(t)
	r := newRepo(t)
	now := r.commit("Signed today", k.ci)
	june2020 := r.commit("Dated June 2020", k.ci, "GIT_COMMITTER_DATE=2020-06-01T00:00:00Z")
	ci := k.ci.public

	tests := []struct {
		name    string
		signers string
		raw     []byte
		want    Reason // 0: verifies
		who     string // the signer's identity when it verifies
		says    string // in the message when refused
	}{
		{name: "a line without options trusts its key", signers: "ci@example.com " + ci, raw: now, who: "ci@example.com"},
		{name: "namespaces without git are refused", signers: `ci@example.com namespaces="file" ` + ci, raw: now, want: KeyNotValid, says: "namespace git"},
		{name: "namespaces with git are trusted", signers: `ci@example.com namespaces="file,git" ` + ci, raw: now, who: "ci@example.com"},
		{name: "valid-before in the past is refused", signers: `ci@example.com valid-before="20200101" ` + ci, raw: now, want: KeyNotValid, says: "valid before 2020-01-01T00:00:00Z"},
		{name: "valid-after in the future is refused", signers: `ci@example.com valid-after="20991231Z" ` + ci, raw: now, want: KeyNotValid, says: "valid after 2099-12-31T00:00:00Z"},
		{name: "a validity window around the commit is trusted", signers: `ci@example.com valid-after="20200101",valid-before="209912312359" ` + ci, raw: now, who: "ci@example.com"},
		{name: "validity is checked at the commit's time, not today", signers: `ci@example.com valid-before="20210101" ` + ci, raw: june2020, who: "ci@example.com"},
		{name: "a commit dated before valid-after is refused", signers: `ci@example.com valid-after="20200601000001" ` + ci, raw: june2020, want: KeyNotValid, says: "not at 2020-06-01T00:00:00Z"},
		{
			name:    "another line of the same key may trust it",
			signers: `old@example.com valid-before="20200101" ` + ci + "\n" + `ci@example.com,deploy@example.com ` + ci,
			raw:     now, who: "ci@example.com,deploy@example.com",
		},
		{name: "quoted principals name the signer", signers: `"CI Bot",ci@example.com ` + ci, raw: now, who: "CI Bot,ci@example.com"},
		{name: "another key under the same principal is no trust", signers: "ci@example.com " + k.stranger.public, raw: now, want: UnknownKey, says: k.ci.fpr},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			keys := mustParse(t, map[string][]byte{"allowed_signers": []byte(tt.signers)})
			got, err := keys.Commit(tt.raw)
			if tt.want == 0 {
				wantSigner(t, got, err, Signer{Method: "ssh", Identity: tt.who, Key: k.ci.fpr})
				return
			}
			wantRefused(t, got, err, tt.want, "")
			if !strings.Contains(err.Error(), tt.says) {
				t.Errorf("message %q, want it to hold %q", err, tt.says)
			}
		})
	}
}

func TestSSHPayload(t *testing.T) {
	t.Parallel()
	k := kit(t)
	keys := trusted(t)
	r := newRepo(t)
	unsigned := r.commit("Signed outside git", nil)

	t.Run("the payload is the commit without its gpgsig header, as ssh-keygen signs it for git", func(t *testing.T) {
		got, err := keys.Commit(withHeader(unsigned, "gpgsig", k.sshSign(t, k.ci, "git", unsigned)))
		wantSigner(t, got, err, Signer{Method: "ssh", Identity: "ci@example.com", Key: k.ci.fpr})
	})
	t.Run("a signature made in another namespace is BadSignature", func(t *testing.T) {
		got, err := keys.Commit(withHeader(unsigned, "gpgsig", k.sshSign(t, k.ci, "file", unsigned)))
		wantRefused(t, got, err, BadSignature, k.ci.fpr)
		if !strings.Contains(err.Error(), `namespace "file"`) {
			t.Errorf("message %q, want it to name the namespace", err)
		}
	})
}
