package cronschedule

import (
	"math/bits"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/robfig/cron/v3"
)

// render lists the values a schedule allows, field by field, so a case
// states what a spec means rather than how the library stores it.
func render(s cron.Schedule) string {
	switch s := s.(type) {
	case cron.ConstantDelaySchedule:
		return "@every " + s.Delay.String()
	case *cron.SpecSchedule:
		var b strings.Builder
		for i, f := range []uint64{s.Minute, s.Hour, s.Dom, s.Month, s.Dow} {
			if i > 0 {
				b.WriteByte(' ')
			}
			f &^= 1 << 63 // the library's mark of a field written as * or ?
			for first := true; f != 0; first = false {
				n := bits.TrailingZeros64(f)
				f &^= 1 << n
				if !first {
					b.WriteByte(',')
				}
				b.WriteString(strconv.Itoa(n))
			}
		}
		return b.String()
	}
	return "unknown schedule type"
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		spec, want, err string
	}{
		{spec: "*/15 * * * *", want: "0,15,30,45 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23 1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31 1,2,3,4,5,6,7,8,9,10,11,12 0,1,2,3,4,5,6"},
		{spec: "5 4 1-3,15 JAN-mar mon-FRI", want: "5 4 1,2,3,15 1,2,3 1,2,3,4,5"},
		{spec: "30/10 9-17/4 ? * 0", want: "30,40,50 9,13,17 1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31 1,2,3,4,5,6,7,8,9,10,11,12 0"},
		{spec: "@hourly", want: "0 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23 1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31 1,2,3,4,5,6,7,8,9,10,11,12 0,1,2,3,4,5,6"},
		{spec: "@yearly", want: "0 0 1 1 0,1,2,3,4,5,6"},
		{spec: "@every 90m", want: "@every 1h30m0s"},
		{spec: "CRON_TZ=Asia/Tokyo 0 9 * * *", want: "0 9 1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31 1,2,3,4,5,6,7,8,9,10,11,12 0,1,2,3,4,5,6"},

		// Messages are Kubernetes' own: kubectl prints them after the value.
		{spec: "", err: "empty spec string"},
		{spec: "* * * *", err: "expected exactly 5 fields, found 4: [* * * *]"},
		{spec: "0 0 0 * * *", err: "expected exactly 5 fields, found 6: [0 0 0 * * *]"},
		{spec: "60 * * * *", err: "end of range (60) above maximum (59): 60"},
		{spec: "* * 0 * *", err: "beginning of range (0) below minimum (1): 0"},
		{spec: "* * * * 7", err: "end of range (7) above maximum (6): 7"},
		{spec: "5-1 * * * *", err: "beginning of range (5) beyond end of range (1): 5-1"},
		{spec: "*/0 * * * *", err: "step of range should be a positive number: */0"},
		{spec: "1-2-3 * * * *", err: "too many hyphens: 1-2-3"},
		{spec: "*/2/3 * * * *", err: "too many slashes: */2/3"},
		{spec: "x * * * *", err: `failed to parse int from x: strconv.Atoi: parsing "x": invalid syntax`},
		{spec: "* * * foo *", err: `failed to parse int from foo: strconv.Atoi: parsing "foo": invalid syntax`},
		{spec: "@fortnightly", err: "unrecognized descriptor: @fortnightly"},
		{spec: "@every soon", err: `failed to parse duration @every soon: time: invalid duration "soon"`},
		{spec: "TZ=Nowhere/City 0 * * * *", err: "provided bad location Nowhere/City: unknown time zone Nowhere/City"},
		{spec: "TZ=UTC", err: "provided bad location UTC: missing schedule after it"},
	} {
		t.Run(tc.spec, func(t *testing.T) {
			s, err := Parse(tc.spec)
			switch {
			case tc.err != "":
				if err == nil || err.Error() != tc.err {
					t.Errorf("error = %v, want %q", err, tc.err)
				}
			case err != nil:
				t.Errorf("unexpected error %v", err)
			case render(s) != tc.want:
				t.Errorf("parsed as\n %s\nwant\n %s", render(s), tc.want)
			}
		})
	}
}

func TestNext(t *testing.T) {
	utc := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, tc := range []struct {
		spec, from, want string
	}{
		{"*/15 * * * *", "2026-03-01T10:07:30Z", "2026-03-01T10:15:00Z"},
		{"*/15 * * * *", "2026-03-01T10:15:00Z", "2026-03-01T10:30:00Z"},
		{"0 3 * * *", "2026-03-01T10:07:00Z", "2026-03-02T03:00:00Z"},
		{"@monthly", "2026-12-31T23:59:59Z", "2027-01-01T00:00:00Z"},
		// Both day fields restricted: either one matches (1st or a Monday).
		{"0 0 1 * mon", "2026-03-02T00:00:00Z", "2026-03-09T00:00:00Z"},
		{"0 0 13 * 5", "2026-01-01T00:00:00Z", "2026-01-02T00:00:00Z"},
		// Written as *, day-of-month no longer widens the match: only
		// Fridays (2026-01-01 is a Thursday). Spelled out as 1-31, it does.
		{"0 12 * * 5", "2026-01-01T00:00:00Z", "2026-01-02T12:00:00Z"},
		{"0 12 1-31 * 5", "2026-01-01T00:00:00Z", "2026-01-01T12:00:00Z"},
		{"0 0 29 2 *", "2026-03-01T00:00:00Z", "2028-02-29T00:00:00Z"},
		{"0 0 30 2 *", "2026-03-01T00:00:00Z", "0001-01-01T00:00:00Z"},
		{"@every 90s", "2026-03-01T10:07:30.5Z", "2026-03-01T10:09:00Z"},
		// The schedule's own zone: 09:00 in Tokyo is 00:00 UTC.
		{"TZ=Asia/Tokyo 0 9 * * *", "2026-03-01T01:00:00Z", "2026-03-02T00:00:00Z"},
	} {
		t.Run(tc.spec+" from "+tc.from, func(t *testing.T) {
			s, err := Parse(tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			got := s.Next(utc(tc.from))
			if want := utc(tc.want); !got.Equal(want) {
				t.Errorf("Next = %s, want %s", got.UTC().Format(time.RFC3339), tc.want)
			}
		})
	}

	t.Run("daylight saving gap", func(t *testing.T) {
		ny, err := time.LoadLocation("America/New_York")
		if err != nil {
			t.Fatal(err)
		}
		s, err := Parse("30 2 * * *")
		if err != nil {
			t.Fatal(err)
		}
		// 2026-03-08 02:30 does not exist in New York; the next 02:30 is a day later.
		got := s.Next(time.Date(2026, 3, 8, 0, 0, 0, 0, ny))
		if want := time.Date(2026, 3, 9, 2, 30, 0, 0, ny); !got.Equal(want) {
			t.Errorf("Next = %s, want %s", got, want)
		}
	})
}
