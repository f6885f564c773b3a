package admission

import (
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// How the Pod Security Standards are versioned.
//
// Each check belongs to a level (baseline or restricted) and has one or
// more revisions, each first in force at a policy version v1.minor. A
// namespace pinned to v1.N gets, per check, the newest revision at or below
// v1.N, and no revision at all of checks newer than v1.N. "latest", and any
// version newer than the newest revision, means the newest revisions.
//
// Restricted is every baseline check plus the restricted ones, except that
// a restricted revision may replace ("override") baseline checks that look
// at the same fields: capabilities_restricted replaces capabilities_baseline
// so a pod is not told twice about one capability.
//
// Violations are reported in a fixed order, baseline checks first, each
// group sorted by check ID, so messages are stable.

// psViolation is one failed check: a short reason ("host namespaces") and
// an optional detail naming what failed ("hostNetwork, hostPID").
type psViolation struct {
	reason, detail string
}

// psCheckFn checks a pod (or a pod template): nil means allowed.
type psCheckFn func(meta *metav1.ObjectMeta, spec *corev1.PodSpec) *psViolation

type psCheck struct {
	id        string
	level     psLevel
	revisions []psRevision // oldest first
}

type psRevision struct {
	minor     int // first policy version v1.minor it applies to
	fn        psCheckFn
	overrides []string // baseline check IDs this restricted revision replaces
}

// psRegistry holds, for each level and each policy minor up to the newest
// one any check knows, the checks to run in report order.
type psRegistry struct {
	maxMinor   int
	baseline   [][]psCheckFn
	restricted [][]psCheckFn
}

func newPSRegistry(checks []psCheck) *psRegistry {
	r := &psRegistry{}
	for _, c := range checks {
		if m := c.revisions[len(c.revisions)-1].minor; m > r.maxMinor {
			r.maxMinor = m
		}
	}
	ordered := append([]psCheck(nil), checks...)
	sort.SliceStable(ordered, func(i, j int) bool {
		if ordered[i].level != ordered[j].level {
			return ordered[i].level == psBaseline
		}
		return ordered[i].id < ordered[j].id
	})
	r.baseline = make([][]psCheckFn, r.maxMinor+1)
	r.restricted = make([][]psCheckFn, r.maxMinor+1)
	for minor := 0; minor <= r.maxMinor; minor++ {
		active := map[string]*psRevision{}
		overridden := map[string]bool{}
		for _, c := range ordered {
			if rev := c.at(minor); rev != nil {
				active[c.id] = rev
				for _, o := range rev.overrides {
					overridden[o] = true
				}
			}
		}
		for _, c := range ordered {
			rev := active[c.id]
			if rev == nil {
				continue
			}
			if c.level == psBaseline {
				r.baseline[minor] = append(r.baseline[minor], rev.fn)
				if overridden[c.id] {
					continue
				}
			}
			r.restricted[minor] = append(r.restricted[minor], rev.fn)
		}
	}
	return r
}

// at returns the revision in force at policy v1.minor, or nil.
func (c psCheck) at(minor int) *psRevision {
	var found *psRevision
	for i := range c.revisions {
		if c.revisions[i].minor <= minor {
			found = &c.revisions[i]
		}
	}
	return found
}

// evaluate runs the checks of a level and version and returns the
// violations in report order; none means allowed.
func (r *psRegistry) evaluate(lv psLevelVersion, meta *metav1.ObjectMeta, spec *corev1.PodSpec) []psViolation {
	if lv.level == psPrivileged {
		return nil
	}
	minor := lv.version.minor
	if lv.version.latest || minor > r.maxMinor {
		minor = r.maxMinor
	}
	checks := r.restricted[minor]
	if lv.level == psBaseline {
		checks = r.baseline[minor]
	}
	if meta == nil {
		meta = &metav1.ObjectMeta{}
	}
	var out []psViolation
	for _, check := range checks {
		if v := check(meta, spec); v != nil {
			out = append(out, *v)
		}
	}
	return out
}

// psDetail is the long form used when one object is refused or warned
// about: "reason (detail), reason, ...".
func psDetail(vs []psViolation) string {
	var b strings.Builder
	for i, v := range vs {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(v.reason)
		if v.detail != "" {
			b.WriteString(" (" + v.detail + ")")
		}
	}
	return b.String()
}

// psReasons is the short form used when many existing pods are listed:
// reasons only, so pods failing the same way group together.
func psReasons(vs []psViolation) string {
	reasons := make([]string, len(vs))
	for i, v := range vs {
		reasons[i] = v.reason
	}
	return strings.Join(reasons, ", ")
}
