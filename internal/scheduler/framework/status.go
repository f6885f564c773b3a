package framework

import (
	"errors"
	"strings"
)

// Code is the outcome class of a plugin call.
type Code int

const (
	// Success: the plugin passes the pod (Filter), or did its work.
	Success Code = iota
	// Error: an internal failure; the pod is retried with backoff.
	Error
	// Unschedulable: the node does not fit now, but preemption or a
	// change in the cluster could make it fit.
	Unschedulable
	// UnschedulableAndUnresolvable: no preemption on this node can help
	// (e.g. a node selector that does not match).
	UnschedulableAndUnresolvable
	// Wait: a Permit plugin holds the pod.
	Wait
	// Skip: from PreFilter/PreScore, the plugin has nothing to do for this
	// pod and its Filter/Score are not called in this cycle. From Bind, the
	// plugin leaves binding to the next bind plugin.
	Skip
	// Pending: the pod waits for something outside the scheduler (e.g. a
	// volume being provisioned); it is not retried by backoff.
	Pending
)

var codeNames = [...]string{"Success", "Error", "Unschedulable", "UnschedulableAndUnresolvable", "Wait", "Skip", "Pending"}

func (c Code) String() string {
	if int(c) < len(codeNames) {
		return codeNames[c]
	}
	return "Unknown"
}

// Status is what a plugin returns. A nil *Status is Success; every method
// works on nil.
type Status struct {
	code    Code
	reasons []string
	err     error
	plugin  string
}

// NewStatus makes a status with reasons. Reasons are the user-facing
// strings counted in FailedScheduling messages, e.g. "Insufficient cpu".
func NewStatus(code Code, reasons ...string) *Status {
	return &Status{code: code, reasons: reasons}
}

// AsStatus wraps an internal error.
func AsStatus(err error) *Status {
	if err == nil {
		return nil
	}
	return &Status{code: Error, reasons: []string{err.Error()}, err: err}
}

func (s *Status) Code() Code {
	if s == nil {
		return Success
	}
	return s.code
}

// Reasons are the user-facing reasons.
func (s *Status) Reasons() []string {
	if s == nil {
		return nil
	}
	if s.err != nil && len(s.reasons) == 0 {
		return []string{s.err.Error()}
	}
	return s.reasons
}

// Message joins the reasons.
func (s *Status) Message() string { return strings.Join(s.Reasons(), ", ") }

// Plugin is the name of the plugin that returned the status, set by the
// framework.
func (s *Status) Plugin() string {
	if s == nil {
		return ""
	}
	return s.plugin
}

// WithPlugin records the plugin name and returns s. A status that
// already names the plugin is not written to, so a plugin may return one
// status it made in advance for many nodes, from concurrent Filter calls.
func (s *Status) WithPlugin(name string) *Status {
	if s != nil && s.plugin != name {
		s.plugin = name
	}
	return s
}

func (s *Status) IsSuccess() bool { return s.Code() == Success }
func (s *Status) IsSkip() bool    { return s.Code() == Skip }

// IsRejected reports whether the pod does not fit (as opposed to an error).
func (s *Status) IsRejected() bool {
	c := s.Code()
	return c == Unschedulable || c == UnschedulableAndUnresolvable || c == Pending
}

// AsError returns the status as an error, nil for Success and Skip.
func (s *Status) AsError() error {
	if s.IsSuccess() || s.IsSkip() {
		return nil
	}
	if s.err != nil {
		return s.err
	}
	return errors.New(s.Message())
}

func (s *Status) String() string {
	if s == nil {
		return "Success"
	}
	if len(s.reasons) == 0 && s.err == nil {
		return s.code.String()
	}
	return s.code.String() + ": " + s.Message()
}
