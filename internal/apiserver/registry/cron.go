package registry

import (
	"fmt"
	"math/bits"
	"strconv"
	"strings"
	"time"
)

// CronSchedule is a parsed CronJob schedule: the standard five cron fields
// (minute hour day-of-month month day-of-week), a descriptor such as
// @hourly, or "@every <duration>", optionally after a TZ= or CRON_TZ=
// location. This is the dialect Kubernetes accepts, and parse errors read
// as Kubernetes reports them, since kubectl shows them verbatim.
type CronSchedule struct {
	// One bit per allowed value; starBit marks a field written as * or ?,
	// which matters for the day-of-month/day-of-week rule in dayMatches.
	minute, hour, dom, month, dow uint64
	// every is set for "@every" schedules, which ignore the fields.
	every time.Duration
	// loc is the TZ= location, nil when the schedule names none.
	loc *time.Location
}

const starBit = 1 << 63

type cronBounds struct {
	min, max uint
	names    map[string]uint
}

var (
	cronMinutes = cronBounds{0, 59, nil}
	cronHours   = cronBounds{0, 23, nil}
	cronDom     = cronBounds{1, 31, nil}
	cronMonths  = cronBounds{1, 12, map[string]uint{
		"jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6,
		"jul": 7, "aug": 8, "sep": 9, "oct": 10, "nov": 11, "dec": 12,
	}}
	cronDow = cronBounds{0, 6, map[string]uint{
		"sun": 0, "mon": 1, "tue": 2, "wed": 3, "thu": 4, "fri": 5, "sat": 6,
	}}
)

var cronDescriptors = map[string]string{
	"@yearly":   "0 0 1 1 *",
	"@annually": "0 0 1 1 *",
	"@monthly":  "0 0 1 * *",
	"@weekly":   "0 0 * * 0",
	"@daily":    "0 0 * * *",
	"@midnight": "0 0 * * *",
	"@hourly":   "0 * * * *",
}

// ParseCronSchedule parses a CronJob's spec.schedule.
func ParseCronSchedule(spec string) (*CronSchedule, error) {
	if spec == "" {
		return nil, fmt.Errorf("empty spec string")
	}
	var loc *time.Location
	if strings.HasPrefix(spec, "TZ=") || strings.HasPrefix(spec, "CRON_TZ=") {
		eq := strings.Index(spec, "=")
		sp := strings.Index(spec, " ")
		if sp < 0 {
			return nil, fmt.Errorf("provided bad location %s: missing schedule after it", spec[eq+1:])
		}
		var err error
		if loc, err = time.LoadLocation(spec[eq+1 : sp]); err != nil {
			return nil, fmt.Errorf("provided bad location %s: %v", spec[eq+1:sp], err)
		}
		spec = strings.TrimSpace(spec[sp:])
	}
	if strings.HasPrefix(spec, "@") {
		if fields, ok := cronDescriptors[spec]; ok {
			s, err := parseCronFields(fields)
			if s != nil {
				s.loc = loc
			}
			return s, err
		}
		if rest, ok := strings.CutPrefix(spec, "@every "); ok {
			d, err := time.ParseDuration(rest)
			if err != nil {
				return nil, fmt.Errorf("failed to parse duration %s: %s", spec, err)
			}
			// Sub-second periods would fire continuously; cron runs at
			// most once a second.
			d = max(d.Truncate(time.Second), time.Second)
			return &CronSchedule{every: d, loc: loc}, nil
		}
		return nil, fmt.Errorf("unrecognized descriptor: %s", spec)
	}
	s, err := parseCronFields(spec)
	if s != nil {
		s.loc = loc
	}
	return s, err
}

func parseCronFields(spec string) (*CronSchedule, error) {
	fields := strings.Fields(spec)
	if len(fields) != 5 {
		return nil, fmt.Errorf("expected exactly 5 fields, found %d: %s", len(fields), fields)
	}
	var s CronSchedule
	for i, f := range []struct {
		dst *uint64
		b   cronBounds
	}{{&s.minute, cronMinutes}, {&s.hour, cronHours}, {&s.dom, cronDom}, {&s.month, cronMonths}, {&s.dow, cronDow}} {
		v, err := parseCronField(fields[i], f.b)
		if err != nil {
			return nil, err
		}
		*f.dst = v
	}
	return &s, nil
}

func parseCronField(field string, b cronBounds) (uint64, error) {
	var v uint64
	for _, r := range strings.FieldsFunc(field, func(c rune) bool { return c == ',' }) {
		bitsOf, err := parseCronRange(r, b)
		if err != nil {
			return 0, err
		}
		v |= bitsOf
	}
	return v, nil
}

// parseCronRange parses one comma-separated element: *, N, N-M, each
// optionally followed by /step. "N/step" means N through the maximum.
func parseCronRange(expr string, b cronBounds) (uint64, error) {
	rangeAndStep := strings.Split(expr, "/")
	lowHigh := strings.Split(rangeAndStep[0], "-")
	var start, end, step uint
	var extra uint64
	var err error
	if lowHigh[0] == "*" || lowHigh[0] == "?" {
		start, end, extra = b.min, b.max, starBit
	} else {
		if start, err = parseCronNumber(lowHigh[0], b.names); err != nil {
			return 0, err
		}
		switch len(lowHigh) {
		case 1:
			end = start
		case 2:
			if end, err = parseCronNumber(lowHigh[1], b.names); err != nil {
				return 0, err
			}
		default:
			return 0, fmt.Errorf("too many hyphens: %s", expr)
		}
	}
	switch len(rangeAndStep) {
	case 1:
		step = 1
	case 2:
		if step, err = parseCronNumber(rangeAndStep[1], nil); err != nil {
			return 0, err
		}
		if len(lowHigh) == 1 {
			end = b.max
		}
		if step > 1 {
			extra = 0
		}
	default:
		return 0, fmt.Errorf("too many slashes: %s", expr)
	}
	switch {
	case start < b.min:
		return 0, fmt.Errorf("beginning of range (%d) below minimum (%d): %s", start, b.min, expr)
	case end > b.max:
		return 0, fmt.Errorf("end of range (%d) above maximum (%d): %s", end, b.max, expr)
	case start > end:
		return 0, fmt.Errorf("beginning of range (%d) beyond end of range (%d): %s", start, end, expr)
	case step == 0:
		return 0, fmt.Errorf("step of range should be a positive number: %s", expr)
	}
	var v uint64
	for i := start; i <= end; i += step {
		v |= 1 << i
	}
	return v | extra, nil
}

func parseCronNumber(s string, names map[string]uint) (uint, error) {
	if n, ok := names[strings.ToLower(s)]; ok {
		return n, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("failed to parse int from %s: %s", s, err)
	}
	if n < 0 {
		return 0, fmt.Errorf("negative number (%d) not allowed: %s", n, s)
	}
	return uint(n), nil
}

// Next returns the first activation strictly after t, in t's location
// unless the schedule names its own, or the zero time if there is none in
// the next five years (a schedule such as "0 0 30 2 *" never fires).
func (s *CronSchedule) Next(t time.Time) time.Time {
	if s.loc != nil {
		t = t.In(s.loc)
	}
	if s.every > 0 {
		return t.Truncate(time.Second).Add(s.every)
	}
	loc := t.Location()
	// Start at the next whole minute: the schedule has no seconds field.
	t = t.Truncate(time.Minute).Add(time.Minute)
	limit := t.Year() + 5

	for t.Year() <= limit {
		if s.month&(1<<uint(t.Month())) == 0 {
			t = time.Date(t.Year(), t.Month()+1, 1, 0, 0, 0, 0, loc)
			continue
		}
		if !s.dayMatches(t) {
			t = time.Date(t.Year(), t.Month(), t.Day()+1, 0, 0, 0, 0, loc)
			continue
		}
		if s.hour&(1<<uint(t.Hour())) == 0 {
			next := time.Date(t.Year(), t.Month(), t.Day(), t.Hour()+1, 0, 0, 0, loc)
			if !next.After(t) { // a daylight-saving fold repeats the hour
				next = t.Truncate(time.Hour).Add(time.Hour)
			}
			t = next
			continue
		}
		if s.minute&(1<<uint(t.Minute())) == 0 {
			t = t.Add(time.Minute)
			continue
		}
		return t
	}
	return time.Time{}
}

// dayMatches applies cron's day rule: when both day fields are restricted
// a day matching either one fires; when either is *, both must match.
func (s *CronSchedule) dayMatches(t time.Time) bool {
	domMatch := s.dom&(1<<uint(t.Day())) != 0
	dowMatch := s.dow&(1<<uint(t.Weekday())) != 0
	if s.dom&starBit != 0 || s.dow&starBit != 0 {
		return domMatch && dowMatch
	}
	return domMatch || dowMatch
}

// String renders the allowed values, for debugging and tests.
func (s *CronSchedule) String() string {
	if s.every > 0 {
		return "@every " + s.every.String()
	}
	var b strings.Builder
	for i, f := range []uint64{s.minute, s.hour, s.dom, s.month, s.dow} {
		if i > 0 {
			b.WriteByte(' ')
		}
		f &^= starBit
		first := true
		for f != 0 {
			n := bits.TrailingZeros64(f)
			f &^= 1 << n
			if !first {
				b.WriteByte(',')
			}
			first = false
			b.WriteString(strconv.Itoa(n))
		}
	}
	return b.String()
}
