package verify_test

import (
	"fmt"

	"tether.dev/tether/source/verify"
)

func ExampleKeys_Commit() {
	// The data of a Secret of trusted keys: allowed_signers lines here, or
	// armored OpenPGP public keys.
	keys, err := verify.ParseKeys(map[string][]byte{
		"allowed_signers": []byte("ci@example.com ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOpKbGPinFIKvvVQexMuxfmVR3auvr57kkIe6mkURtIs\n"),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	// A commit as `git cat-file commit` prints it.
	raw := []byte("tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904\n" +
		"author Ann <ann@example.com> 1700000000 +0000\n" +
		"committer Ann <ann@example.com> 1700000000 +0000\n" +
		"\n" +
		"Deploy the web tier\n")
	signer, err := keys.Commit(raw)
	if err != nil {
		fmt.Println(verify.ReasonOf(err) == verify.Unsigned, err)
		return
	}
	fmt.Println("signed by", signer)
	// Output: true not signed
}
