package runtime

import "github.com/rudder-dev/rudder/internal/runtime/monitor"

// The CRI log writer moved to the monitor package (its own tests are in
// monitor/log_test.go); these names keep older tests here compiling.
var (
	openCRILog = monitor.OpenLog
	copyLines  = monitor.CopyLines
)

const maxLogLine = monitor.MaxLineSize
