package cosign_test

import (
	"fmt"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"tether.dev/tether/source/cosign"
)

func ExampleSignatureTag() {
	// cosign v2 tags the signatures of an artifact with its digest.
	subject := ocispec.Descriptor{Digest: "sha256:97fc222cee7991b5b061d4d4afdb5f3428fcb0c9054e1690313786befa1e4e36"}
	fmt.Println(cosign.SignatureTag(subject))
	// Output: sha256-97fc222cee7991b5b061d4d4afdb5f3428fcb0c9054e1690313786befa1e4e36.sig
}

func ExampleParseKeys() {
	// The data of a Secret of trusted keys: cosign.pub as `cosign
	// generate-key-pair` writes it.
	keys, err := cosign.ParseKeys(map[string][]byte{
		"cosign.pub": []byte("-----BEGIN PUBLIC KEY-----\n" +
			"MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEUkV/0iaGWKH5Sna3c/TFxIboTnKy\n" +
			"tnT49J7mWso10kcCtNTHiaLy4tN/L91W0y7ZWWSYHTODkgTAuZypTQDmSg==\n" +
			"-----END PUBLIC KEY-----\n"),
		"cosign.key": []byte("-----BEGIN ENCRYPTED SIGSTORE PRIVATE KEY-----\n-----END ENCRYPTED SIGSTORE PRIVATE KEY-----\n"),
	})
	fmt.Println(keys == nil, err)
	// Output: true entry "cosign.key": holds a private key: give its public key (cosign.pub), and keep the private key out of the cluster
}
