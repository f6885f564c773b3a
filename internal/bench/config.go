package bench

import (
	"fmt"
	"slices"
	"time"
)

// Stage names, in the order they run. The order matters: the LIST stage
// grows an empty namespace through its sizes, so it must come first; the
// watch stage's watchers must see only its own events, so it comes last.
const (
	StageList  = "list"
	StageCRUD  = "crud"
	StageWatch = "watch"
)

var allStages = []string{StageList, StageCRUD, StageWatch}

// Config is one run of the API scenario. Zero values take the defaults
// `rudder bench api` documents.
type Config struct {
	// Kubeconfig selects the cluster to load. Empty starts a fresh embedded
	// server (etcd included) in a temporary directory, removed afterwards.
	Kubeconfig string
	// Seed fixes every generated pod, so runs with equal flags send equal bytes.
	Seed uint64
	// Stages to run, a subset of list, crud, watch (default all).
	Stages []string

	// Clients are the concurrent clients of the CRUD stage; several values
	// run the stage once per value, which is how throughput vs C is measured.
	Clients []int
	// Objects is the number of pods each CRUD run creates, updates and gets.
	Objects int

	// ListSizes are the namespace sizes the LIST stage measures, ascending.
	ListSizes []int
	// ListReps is the number of timed LISTs per size and encoding.
	ListReps int

	// Watchers are the concurrent watches of the watch stage; several values
	// run the stage once per value (delivery vs W).
	Watchers []int
	// Events is the number of writes each watcher must receive.
	Events int
	// EventRate is the writes per second, spread over Writers writers.
	EventRate float64
	Writers   int
	// WatchDecode is how watchers decode events: DecodeFull or DecodeMetadata.
	WatchDecode string
	// Drain bounds the wait, after the last write, for watchers to catch up;
	// what has not arrived by then is counted lost.
	Drain time.Duration

	// Connections is the number of separate HTTP/2 connections (one client-go
	// clientset and transport each) the clients and watchers are spread over.
	Connections int
	// StageTimeout bounds every stage, so a stalled server cannot hang a run.
	StageTimeout time.Duration
	// CPUProfile, when set, is where a pprof CPU profile of the stages (server
	// and client both, when the server is embedded) is written.
	CPUProfile string
}

// Defaults are the reference sizes.
func (c *Config) defaults() {
	if c.Seed == 0 {
		c.Seed = 1
	}
	if len(c.Stages) == 0 {
		c.Stages = allStages
	}
	if len(c.Clients) == 0 {
		c.Clients = []int{64}
	}
	if c.Objects == 0 {
		c.Objects = 10000
	}
	if len(c.ListSizes) == 0 {
		c.ListSizes = []int{10000}
	}
	if c.ListReps == 0 {
		c.ListReps = 10
	}
	if len(c.Watchers) == 0 {
		c.Watchers = []int{1000}
	}
	if c.Events == 0 {
		c.Events = 10000
	}
	if c.EventRate == 0 {
		c.EventRate = DefaultEventRate
	}
	if c.Writers == 0 {
		c.Writers = 8
	}
	if c.WatchDecode == "" {
		c.WatchDecode = DecodeFull
	}
	if c.Drain == 0 {
		c.Drain = 30 * time.Second
	}
	if c.Connections == 0 {
		c.Connections = 16
	}
	if c.StageTimeout == 0 {
		c.StageTimeout = 10 * time.Minute
	}
}

// DefaultEventRate is the watch stage's writes per second. At 1,000
// watchers it is 50,000 deliveries a second; each costs this process some
// 20-30µs of CPU (server, TLS both ways, and the watchers' decoding), so
// about 1.2 of the machine's 2 cores, leaving room for etcd and the writes.
// A rate the CPUs cannot sustain measures queueing, not delivery.
const DefaultEventRate = 50

func (c *Config) validate() error {
	for _, s := range c.Stages {
		if !slices.Contains(allStages, s) {
			return fmt.Errorf("unknown stage %q (want %v)", s, allStages)
		}
	}
	positive := map[string][]int{"clients": c.Clients, "list-sizes": c.ListSizes, "watchers": c.Watchers,
		"objects": {c.Objects}, "list-reps": {c.ListReps}, "events": {c.Events}, "writers": {c.Writers}, "connections": {c.Connections}}
	for name, vals := range positive {
		for _, v := range vals {
			if v <= 0 {
				return fmt.Errorf("--%s must be positive, got %d", name, v)
			}
		}
	}
	if !slices.IsSorted(c.ListSizes) {
		return fmt.Errorf("--list-sizes must be ascending: the namespace only grows")
	}
	if c.WatchDecode != DecodeFull && c.WatchDecode != DecodeMetadata {
		return fmt.Errorf("--watch-decode must be %s or %s", DecodeFull, DecodeMetadata)
	}
	if c.EventRate <= 0 {
		return fmt.Errorf("--event-rate must be positive")
	}
	return nil
}

func (c *Config) runs(stage string) bool { return slices.Contains(c.Stages, stage) }
