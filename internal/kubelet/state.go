package kubelet

import (
	"slices"
	"time"
)

// This file is the kubelet's picture of one pod in the runtime, as the
// CRI reports it: plain data, read by the plan and the status functions
// and filled by observe (runtime.go).

// containerState is a container's CRI state.
type containerState int

const (
	stateCreated containerState = iota
	stateRunning
	stateExited
	stateUnknown
)

func (s containerState) String() string {
	return [...]string{"created", "running", "exited", "unknown"}[s]
}

// observedContainer is one container instance (one attempt) of a pod.
type observedContainer struct {
	ID           string
	Name         string
	SandboxID    string
	RestartCount int32 // io.kubernetes.container.restartCount, else the CRI attempt
	State        containerState
	CreatedAt    time.Time
	StartedAt    time.Time
	FinishedAt   time.Time
	ExitCode     int32
	Reason       string // the runtime's: OOMKilled, Error, Completed, ...
	Message      string // the runtime's, or the termination message file's
	Hash         string // io.kubernetes.container.hash: what it was created from
	ImageRef     string
	LogPath      string
}

// eventTime is when a container that is not running stopped (or, never
// started, was created): back-off counts from it.
func (c *observedContainer) eventTime() time.Time {
	if !c.FinishedAt.IsZero() {
		return c.FinishedAt
	}
	return c.CreatedAt
}

// observedSandbox is one pod sandbox (one attempt).
type observedSandbox struct {
	ID        string
	Attempt   uint32
	Ready     bool
	CreatedAt time.Time
	IPs       []string // the first is the primary
}

// ipsOrNil is the sandbox's IPs (nil for no sandbox).
func (s *observedSandbox) ipsOrNil() []string {
	if s == nil {
		return nil
	}
	return s.IPs
}

// podObserved is everything the runtime holds for one pod UID: its
// sandboxes and containers, each newest first.
type podObserved struct {
	Sandboxes  []observedSandbox
	Containers []observedContainer
}

// sortNewestFirst orders sandboxes by attempt and containers by restart
// count, then by creation: the order the plan reads them in.
func (o *podObserved) sortNewestFirst() {
	slices.SortStableFunc(o.Sandboxes, func(a, b observedSandbox) int {
		if a.Attempt != b.Attempt {
			return int(b.Attempt) - int(a.Attempt)
		}
		return b.CreatedAt.Compare(a.CreatedAt)
	})
	slices.SortStableFunc(o.Containers, func(a, b observedContainer) int {
		if a.RestartCount != b.RestartCount {
			return int(b.RestartCount - a.RestartCount)
		}
		return b.CreatedAt.Compare(a.CreatedAt)
	})
}

// latestSandbox is the newest sandbox, or nil.
func (o *podObserved) latestSandbox() *observedSandbox {
	if len(o.Sandboxes) == 0 {
		return nil
	}
	return &o.Sandboxes[0]
}

// instances lists the named container's instances, newest first.
func (o *podObserved) instances(name string) []*observedContainer {
	var out []*observedContainer
	for i := range o.Containers {
		if o.Containers[i].Name == name {
			out = append(out, &o.Containers[i])
		}
	}
	return out
}

// latest is the named container's newest instance, or nil.
func (o *podObserved) latest(name string) *observedContainer {
	for i := range o.Containers {
		if o.Containers[i].Name == name {
			return &o.Containers[i]
		}
	}
	return nil
}

// latestIn is the named container's newest instance in the sandbox, or
// nil.
func (o *podObserved) latestIn(name, sandboxID string) *observedContainer {
	for i := range o.Containers {
		if c := &o.Containers[i]; c.Name == name && c.SandboxID == sandboxID {
			return c
		}
	}
	return nil
}

// running lists every running container.
func (o *podObserved) running() []*observedContainer {
	var out []*observedContainer
	for i := range o.Containers {
		if o.Containers[i].State == stateRunning {
			out = append(out, &o.Containers[i])
		}
	}
	return out
}

// ids lists the IDs of every container instance.
func (o *podObserved) ids() []string {
	out := make([]string, len(o.Containers))
	for i := range o.Containers {
		out[i] = o.Containers[i].ID
	}
	return out
}

// empty reports whether the runtime holds nothing of the pod.
func (o *podObserved) empty() bool { return len(o.Sandboxes) == 0 && len(o.Containers) == 0 }
