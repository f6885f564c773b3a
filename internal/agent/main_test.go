package agent_test

import (
	"os"
	"testing"

	"github.com/rudder-dev/rudder/internal/runtime"
)

// TestMain lets the test binary be the containers' monitor, as the rudder
// binary is in production: the runtime re-executes its own executable
// with runtime.ShimSubcommand. Without this, the monitor would run the
// tests again.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == runtime.ShimSubcommand {
		os.Exit(runtime.ShimMain(os.Args[2:]))
	}
	os.Exit(m.Run())
}
