package attach

import (
	"os/exec"
	"strings"
	"testing"
)

// The store served from outside another broker never depends on dss's
// own broker core (DESIGN.md): package attach imports neither the core
// nor its binding, directly or through another package.
func TestNoImportOfTheBrokerCore(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/dssio/dss/internal/attach").CombinedOutput()
	if err != nil {
		t.Skipf("go list: %v: %s", err, out)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if strings.HasPrefix(pkg, "github.com/dssio/dss/internal/mqtt") || pkg == "github.com/dssio/dss/internal/broker" {
			t.Errorf("package attach depends on %s", pkg)
		}
	}
}
