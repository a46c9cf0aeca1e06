package deploy

// Every test binary of the module understands -update (tests/golden), so
// that `go test ./... -update` runs; this package has no golden files.
import _ "github.com/labhub/teamspace/tests/golden"
