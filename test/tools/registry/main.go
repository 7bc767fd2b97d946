// Command registry is CNCF Distribution's registry with the one storage driver
// Tether's tests use (a directory on disk). Distribution's own cmd/registry also
// links the Azure, GCS and S3 drivers and CloudFront, whose SDKs cost most of a
// cold build; the registry itself (handlers, storage, the distribution API) is
// the same code.
package main

import (
	"os"

	"github.com/distribution/distribution/v3/registry"
	_ "github.com/distribution/distribution/v3/registry/storage/driver/filesystem"
)

func main() {
	if err := registry.RootCmd.Execute(); err != nil {
		os.Exit(1)
	}
}
