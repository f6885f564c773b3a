// Package cronschedule parses a CronJob's spec.schedule. It is the one
// parser both sides of a CronJob use: the API server's validation
// (internal/apiserver/registry) and the cronjob controller
// (internal/controllers/cronjob), so what validation accepts is exactly
// what runs.
//
// The dialect and its error texts are github.com/robfig/cron/v3's
// standard parser, which upstream's CronJob uses too: five fields (minute
// hour day-of-month month day-of-week, names such as JAN or mon, ? for
// "any"), descriptors (@hourly, @daily, …), "@every <duration>", and an
// optional TZ=<zone> or CRON_TZ=<zone> prefix. kubectl shows the errors
// verbatim after the value, so they are upstream's, letter for letter:
//
//	sched, err := cronschedule.Parse("CRON_TZ=Asia/Tokyo 0 9 * * *")
//	next := sched.Next(now) // zero when nothing fires in the next five years
//
// A schedule without a zone is read in the zone of the time given to
// Next. Parse never panics on user input (the library does on a zone
// prefix with no schedule after it).
package cronschedule

import (
	"fmt"
	"strings"
	// A TZ= prefix must resolve the same on every host, including minimal
	// images without /usr/share/zoneinfo.
	_ "time/tzdata"

	"github.com/robfig/cron/v3"
)

// Parse parses spec in the standard cron dialect. The Schedule it returns
// is safe for concurrent use.
func Parse(spec string) (cron.Schedule, error) {
	if strings.HasPrefix(spec, "TZ=") || strings.HasPrefix(spec, "CRON_TZ=") {
		if !strings.Contains(spec, " ") {
			_, zone, _ := strings.Cut(spec, "=")
			return nil, fmt.Errorf("provided bad location %s: missing schedule after it", zone)
		}
	}
	return cron.ParseStandard(spec)
}
