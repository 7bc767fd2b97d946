package verify

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// Parts of crafted objects.
const (
	treeLine      = "tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904\n"
	parentLine    = "parent 8b137891791fe96927ad78e64b0aad7bded08bdc\n"
	authorLine    = "author Ann <ann@example.com> 1700000000 +0000\n"
	committerLine = "committer Cid <cid@example.com> 1700000100 +0100\n"
	pgpValue      = "-----BEGIN PGP SIGNATURE-----\n \n iHUEABYKAB0WIQ\n -----END PGP SIGNATURE-----\n"
	pgpSignature  = "-----BEGIN PGP SIGNATURE-----\n\niHUEABYKAB0WIQ\n-----END PGP SIGNATURE-----\n"
)

var committed = time.Unix(1700000100, 0).UTC()

func TestSplitCommit(t *testing.T) {
	head := treeLine + parentLine + authorLine + committerLine
	tests := []struct {
		name      string
		raw       string
		payload   string
		signature string // "" is none
		when      time.Time
	}{
		{
			name: "an unsigned commit is its own payload",
			raw:  head + "\nmessage\n", payload: head + "\nmessage\n", when: committed,
		},
		{
			name:    "the gpgsig header and its continuation lines are the signature, left out of the payload",
			raw:     head + "gpgsig " + pgpValue + "\nmessage\n",
			payload: head + "\nmessage\n", signature: pgpSignature, when: committed,
		},
		{
			name:    "a gpgsig-sha256 header is left out of the payload and is no signature",
			raw:     head + "gpgsig-sha256 " + pgpValue + "\nmessage\n",
			payload: head + "\nmessage\n", when: committed,
		},
		{
			name:    "with both, gpgsig is the signature and neither is in the payload",
			raw:     head + "gpgsig-sha256 " + pgpValue + "gpgsig " + pgpValue + "\nmessage\n",
			payload: head + "\nmessage\n", signature: pgpSignature, when: committed,
		},
		{
			name:    "other headers with continuation lines stay in the payload",
			raw:     head + "mergetag object 1\n type commit\n \n tag v1\n" + "gpgsig " + pgpValue + "encoding UTF-8\n\nmessage\n",
			payload: head + "mergetag object 1\n type commit\n \n tag v1\n" + "encoding UTF-8\n\nmessage\n", signature: pgpSignature, when: committed,
		},
		{
			name:    "a gpgsig line in the message is the message's",
			raw:     head + "\nmessage\ngpgsig " + pgpValue,
			payload: head + "\nmessage\ngpgsig " + pgpValue, when: committed,
		},
		{
			name:    "a gpgsig header with no value is signed, with an empty signature",
			raw:     head + "gpgsig \n\nmessage\n",
			payload: head + "\nmessage\n", signature: "\n", when: committed,
		},
		{
			name: "a commit without a committer has no time",
			raw:  treeLine + authorLine + "\nmessage\n", payload: treeLine + authorLine + "\nmessage\n",
		},
		{
			name: "a commit without a message",
			raw:  head, payload: head, when: committed,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj, err := splitCommit([]byte(tt.raw))
			checkSplit(t, obj, err, tt.payload, tt.signature, tt.when)
			if (tt.signature == "") != (obj.signature == nil) {
				t.Errorf("signed is %t, want %t", obj.signature != nil, tt.signature != "")
			}
		})
	}
}

func TestSplitCommitRefuses(t *testing.T) {
	tests := []struct {
		name string
		raw  string
		want Reason
	}{
		{
			name: "a commit of a sha256 repository",
			raw:  "tree " + strings.Repeat("ab", 32) + "\n" + authorLine + committerLine + "gpgsig-sha256 " + pgpValue + "\nmessage\n",
			want: Unsupported,
		},
		{
			name: "two gpgsig headers",
			raw:  treeLine + committerLine + "gpgsig " + pgpValue + "gpgsig " + pgpValue + "\nmessage\n",
			want: Unverifiable,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := splitCommit([]byte(tt.raw))
			if ReasonOf(err) != tt.want {
				t.Errorf("error %v, want reason %s", err, tt.want)
			}
		})
	}
}

func TestSplitTag(t *testing.T) {
	head := "object 8b137891791fe96927ad78e64b0aad7bded08bdc\ntype commit\ntag v1\ntagger Tim <tim@example.com> 1700000100 +0000\n\n"
	quoted := "As git prints it:\n-----BEGIN PGP SIGNATURE-----\nno signature\n-----END PGP SIGNATURE-----\n"
	ssh := "-----BEGIN SSH SIGNATURE-----\nU1NIU0lH\n-----END SSH SIGNATURE-----\n"
	tests := []struct {
		name      string
		raw       string
		payload   string
		signature string
	}{
		{name: "an unsigned tag is its own payload", raw: head + "Version one\n", payload: head + "Version one\n"},
		{name: "the signature block ends the tag", raw: head + "Version one\n" + pgpSignature, payload: head + "Version one\n", signature: pgpSignature},
		{name: "an SSH signature block", raw: head + "Version one\n" + ssh, payload: head + "Version one\n", signature: ssh},
		{name: "the last signature line starts the signature", raw: head + quoted + ssh, payload: head + quoted, signature: ssh},
		{name: "a line that only holds the armor is no signature line", raw: head + "see -----BEGIN PGP SIGNATURE-----\n", payload: head + "see -----BEGIN PGP SIGNATURE-----\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj, err := splitTag([]byte(tt.raw))
			checkSplit(t, obj, err, tt.payload, tt.signature, committed)
		})
	}
	t.Run("a tag of a sha256 repository is Unsupported", func(t *testing.T) {
		_, err := splitTag([]byte("object " + strings.Repeat("ab", 32) + "\ntype commit\n\nv1\n" + pgpSignature))
		if ReasonOf(err) != Unsupported {
			t.Errorf("error %v, want Unsupported", err)
		}
	})
}

func TestIdentTime(t *testing.T) {
	tests := []struct {
		line string
		want time.Time
	}{
		{line: "committer Cid <cid@example.com> 1700000100 +0100", want: committed},
		{line: "committer Cid <cid@example.com> 1700000100 -0700", want: committed},
		{line: "committer Cid <c>d@example.com> 1700000100 +0000", want: committed},
		{line: "committer Cid <cid@example.com>1700000100", want: committed},
		{line: "committer Cid <cid@example.com>"},
		{line: "committer Cid <cid@example.com> soon +0000"},
		{line: "committer Cid <cid@example.com> -5 +0000"},
		{line: "committer Cid <cid@example.com> 99999999999999999999 +0000"},
		{line: "committer Cid cid@example.com 1700000100 +0000"},
		{line: "author Ann <ann@example.com> 1700000100 +0000"},
	}
	for _, tt := range tests {
		got := identTime([]byte(treeLine+tt.line+"\n"), "committer ")
		if !got.Equal(tt.want) {
			t.Errorf("identTime(%q) = %v, want %v", tt.line, got, tt.want)
		}
	}
}

// checkSplit checks what splitCommit or splitTag made of an object: the
// payload, the signature and the committer's or tagger's time.
func checkSplit(t *testing.T, obj signedObject, err error, payload, signature string, when time.Time) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(payload, string(obj.payload)); diff != "" {
		t.Errorf("payload (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(signature, string(obj.signature)); diff != "" {
		t.Errorf("signature (-want +got):\n%s", diff)
	}
	if !obj.when.Equal(when) {
		t.Errorf("time %v, want %v", obj.when, when)
	}
}
