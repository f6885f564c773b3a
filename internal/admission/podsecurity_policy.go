package admission

import (
	"regexp"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The namespace labels that choose a namespace's Pod Security policy. Each
// mode takes a level and, optionally, the policy version whose checks apply.
const (
	PodSecurityEnforceLabel        = "pod-security.kubernetes.io/enforce"
	PodSecurityEnforceVersionLabel = "pod-security.kubernetes.io/enforce-version"
	PodSecurityAuditLabel          = "pod-security.kubernetes.io/audit"
	PodSecurityAuditVersionLabel   = "pod-security.kubernetes.io/audit-version"
	PodSecurityWarnLabel           = "pod-security.kubernetes.io/warn"
	PodSecurityWarnVersionLabel    = "pod-security.kubernetes.io/warn-version"
)

// psLevel is a Pod Security Standard: each level allows less than the one
// before it.
type psLevel string

const (
	psPrivileged psLevel = "privileged"
	psBaseline   psLevel = "baseline"
	psRestricted psLevel = "restricted"
)

// psStrictness orders the levels, for "was the enforce level tightened?".
func psStrictness(l psLevel) int {
	switch l {
	case psPrivileged:
		return 0
	case psBaseline:
		return 1
	}
	return 2
}

// psVersion is a policy version: the checks as they stood at Kubernetes
// v1.minor, or the newest ones ("latest"). Only major version 1 exists.
type psVersion struct {
	minor  int
	latest bool
}

var psLatest = psVersion{latest: true}

func psMinor(minor int) psVersion { return psVersion{minor: minor} }

func (v psVersion) String() string {
	if v.latest {
		return "latest"
	}
	return "v1." + strconv.Itoa(v.minor)
}

// psLevelVersion is what one mode of a namespace asks for, as the user
// wrote it: the version is not clamped to the newest known one, so messages
// name "restricted:v1.99" when the label says v1.99.
type psLevelVersion struct {
	level   psLevel
	version psVersion
}

func (lv psLevelVersion) String() string { return string(lv.level) + ":" + lv.version.String() }

// psPolicy is a namespace's policy in its three modes.
type psPolicy struct {
	enforce, audit, warn psLevelVersion
}

var psVersionPattern = regexp.MustCompile(`^v1\.(0|[1-9][0-9]*)$`)

const (
	psLevelError   = "must be one of privileged, baseline, restricted"
	psVersionError = `must be "latest" or "v1.x"`
)

func psParseLevel(s string) (psLevel, bool) {
	switch l := psLevel(s); l {
	case psPrivileged, psBaseline, psRestricted:
		return l, true
	}
	return "", false
}

func psParseVersion(s string) (psVersion, bool) {
	if s == "latest" {
		return psLatest, true
	}
	m := psVersionPattern.FindStringSubmatch(s)
	if m == nil {
		return psLatest, false
	}
	minor, err := strconv.Atoi(m[1])
	if err != nil {
		return psLatest, false
	}
	return psMinor(minor), true
}

var psLabelsPath = field.NewPath("metadata", "labels")

// psPolicyFor reads a namespace's labels over the defaults. It always
// returns a usable policy, with every bad label listed in the errors. A bad
// enforce level fails closed (restricted); a bad audit or warn level fails
// open (privileged), since those modes never block; a bad version means
// latest.
func psPolicyFor(labels map[string]string, defaults psPolicy) (psPolicy, field.ErrorList) {
	p := defaults
	var errs field.ErrorList
	level := func(label string, into *psLevel, fallback psLevel) {
		s, ok := labels[label]
		if !ok {
			return
		}
		l, valid := psParseLevel(s)
		if !valid {
			l = fallback
			errs = append(errs, field.Invalid(psLabelsPath.Key(label), s, psLevelError))
		}
		*into = l
	}
	version := func(label string, into *psVersion) {
		s, ok := labels[label]
		if !ok {
			return
		}
		v, valid := psParseVersion(s)
		if !valid {
			errs = append(errs, field.Invalid(psLabelsPath.Key(label), s, psVersionError))
		}
		*into = v
	}
	level(PodSecurityEnforceLabel, &p.enforce.level, psRestricted)
	version(PodSecurityEnforceVersionLabel, &p.enforce.version)
	level(PodSecurityAuditLabel, &p.audit.level, psPrivileged)
	version(PodSecurityAuditVersionLabel, &p.audit.version)
	level(PodSecurityWarnLabel, &p.warn.level, psPrivileged)
	version(PodSecurityWarnVersionLabel, &p.warn.version)
	// Enforce does not apply to workload resources, only to the pods they
	// make later; so that a Deployment in an enforcing namespace still
	// hears about its template, an unset warn level follows a (valid)
	// stricter enforce label, with its version unless warn-version is set.
	_, enforceSet := psParseLevel(labels[PodSecurityEnforceLabel])
	_, warnSet := labels[PodSecurityWarnLabel]
	_, warnVersionSet := labels[PodSecurityWarnVersionLabel]
	if enforceSet && !warnSet && psStrictness(p.enforce.level) > psStrictness(p.warn.level) {
		p.warn.level = p.enforce.level
		if !warnVersionSet {
			p.warn.version = p.enforce.version
		}
	}
	return p, errs
}

// psSameErrors reports whether two label error lists say the same thing:
// an update that keeps an already-bad label is not refused for it.
func psSameErrors(a, b field.ErrorList) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Error() != b[i].Error() {
			return false
		}
	}
	return true
}

// PodSecurityDefaults is the policy of a namespace without labels, in the
// shape of upstream's PodSecurityConfiguration "defaults" (empty fields
// mean privileged and latest).
type PodSecurityDefaults struct {
	Enforce        string `json:"enforce,omitempty"`
	EnforceVersion string `json:"enforce-version,omitempty"`
	Audit          string `json:"audit,omitempty"`
	AuditVersion   string `json:"audit-version,omitempty"`
	Warn           string `json:"warn,omitempty"`
	WarnVersion    string `json:"warn-version,omitempty"`
}

// policy parses the defaults, with the same fallbacks as namespace labels;
// the error names each bad field as the configuration file does.
func (d PodSecurityDefaults) policy() (psPolicy, error) {
	labels := map[string]string{}
	for label, v := range map[string]string{
		PodSecurityEnforceLabel: d.Enforce, PodSecurityEnforceVersionLabel: d.EnforceVersion,
		PodSecurityAuditLabel: d.Audit, PodSecurityAuditVersionLabel: d.AuditVersion,
		PodSecurityWarnLabel: d.Warn, PodSecurityWarnVersionLabel: d.WarnVersion,
	} {
		if v != "" {
			labels[label] = v
		}
	}
	all := psLevelVersion{level: psPrivileged, version: psLatest}
	p, errs := psPolicyFor(labels, psPolicy{enforce: all, audit: all, warn: all})
	if d.Warn == "" {
		// Configured defaults are taken as written: warn does not follow
		// a default enforce level as it follows an enforce label.
		p.warn.level = psPrivileged
		if d.WarnVersion == "" {
			p.warn.version = psLatest
		}
	}
	for _, e := range errs {
		// metadata.labels[pod-security.kubernetes.io/enforce] -> defaults.enforce
		e.Field = "defaults." + strings.TrimSuffix(e.Field[strings.LastIndex(e.Field, "/")+1:], "]")
	}
	return p, errs.ToAggregate()
}
