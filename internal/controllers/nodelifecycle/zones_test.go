package nodelifecycle

import (
	"maps"
	"testing"
	"time"
)

func TestComputeZoneState(t *testing.T) {
	tests := []struct {
		name string
		c    zoneCount
		want zoneState
	}{
		{"all ready", zoneCount{ready: 10}, stateNormal},
		{"empty", zoneCount{}, stateNormal},
		{"no ready node", zoneCount{notReady: 1}, stateFullDisruption},
		{"two of two down is full, not partial", zoneCount{notReady: 2}, stateFullDisruption},
		{"two of three down: too few to be partial", zoneCount{ready: 1, notReady: 2}, stateNormal},
		{"three of five down: 60%", zoneCount{ready: 2, notReady: 3}, statePartialDisruption},
		{"three of six down: 50%", zoneCount{ready: 3, notReady: 3}, stateNormal},
		{"eleven of twenty down: exactly 55%", zoneCount{ready: 9, notReady: 11}, statePartialDisruption},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := computeZoneState(tt.c, 0.55); got != tt.want {
				t.Errorf("state = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestPlanDisruption(t *testing.T) {
	cfg := Config{}
	cfg.defaults()
	big := cfg.LargeClusterSizeThreshold + 1
	// Three zones through an outage: each step starts from the states
	// the step before left.
	steps := []struct {
		name      string
		counts    map[string]zoneCount
		want      map[string]zoneState
		wantQPS   map[string]float64
		enter     bool
		exit      bool
		wantNoQPS bool
	}{
		{
			name:    "first pass sets every zone's rate",
			counts:  map[string]zoneCount{"a": {ready: 3}, "b": {ready: 3}, "c": {ready: big}},
			want:    map[string]zoneState{"a": stateNormal, "b": stateNormal, "c": stateNormal},
			wantQPS: map[string]float64{"a": 0.1, "b": 0.1, "c": 0.1},
		},
		{
			name:      "no change, no new rates",
			counts:    map[string]zoneCount{"a": {ready: 3}, "b": {ready: 3}, "c": {ready: big}},
			want:      map[string]zoneState{"a": stateNormal, "b": stateNormal, "c": stateNormal},
			wantNoQPS: true,
		},
		{
			name:    "zone a dies: tainted at the normal rate, others carry on",
			counts:  map[string]zoneCount{"a": {notReady: 3}, "b": {ready: 3}, "c": {ready: big}},
			want:    map[string]zoneState{"a": stateFullDisruption, "b": stateNormal, "c": stateNormal},
			wantQPS: map[string]float64{"a": 0.1},
		},
		{
			name:    "partial: small zone stops, large zone slows",
			counts:  map[string]zoneCount{"a": {notReady: 3}, "b": {ready: 1, notReady: 3}, "c": {ready: 1, notReady: big - 1}},
			want:    map[string]zoneState{"a": stateFullDisruption, "b": statePartialDisruption, "c": statePartialDisruption},
			wantQPS: map[string]float64{"b": 0, "c": 0.01},
		},
		{
			name:    "every zone down: stop everything",
			counts:  map[string]zoneCount{"a": {notReady: 3}, "b": {notReady: 4}, "c": {notReady: big}},
			want:    map[string]zoneState{"a": stateFullDisruption, "b": stateFullDisruption, "c": stateFullDisruption},
			wantQPS: map[string]float64{"a": 0, "b": 0, "c": 0},
			enter:   true,
		},
		{
			name:      "still all down: nothing changes",
			counts:    map[string]zoneCount{"a": {notReady: 3}, "b": {notReady: 4}, "c": {notReady: big}},
			want:      map[string]zoneState{"a": stateFullDisruption, "b": stateFullDisruption, "c": stateFullDisruption},
			wantNoQPS: true,
		},
		{
			name:    "one node back: every zone gets the rate of its state",
			counts:  map[string]zoneCount{"a": {ready: 1, notReady: 2}, "b": {notReady: 4}, "c": {notReady: big}},
			want:    map[string]zoneState{"a": stateNormal, "b": stateFullDisruption, "c": stateFullDisruption},
			wantQPS: map[string]float64{"a": 0.1, "b": 0.1, "c": 0.1},
			exit:    true,
		},
	}
	prev := map[string]zoneState{}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			p := planDisruption(prev, s.counts, &cfg)
			if !maps.Equal(p.states, s.want) {
				t.Errorf("states = %v, want %v", p.states, s.want)
			}
			if s.wantNoQPS && len(p.qps) != 0 {
				t.Errorf("qps = %v, want none", p.qps)
			}
			if s.wantQPS != nil && !maps.Equal(p.qps, s.wantQPS) {
				t.Errorf("qps = %v, want %v", p.qps, s.wantQPS)
			}
			if p.enterFull != s.enter || p.exitFull != s.exit {
				t.Errorf("enter %v exit %v, want %v %v", p.enterFull, p.exitFull, s.enter, s.exit)
			}
			prev = p.states
		})
	}
	t.Run("no nodes: nothing", func(t *testing.T) {
		if p := planDisruption(nil, nil, &cfg); p.enterFull || p.exitFull || len(p.qps) != 0 {
			t.Errorf("%+v", p)
		}
	})
	t.Run("a single zone entirely down is treated as the controller cut off", func(t *testing.T) {
		p := planDisruption(map[string]zoneState{"a": stateNormal}, map[string]zoneCount{"a": {notReady: 1}}, &cfg)
		if !p.enterFull || p.qps["a"] != 0 {
			t.Errorf("%+v", p)
		}
	})
}

func TestLimiter(t *testing.T) {
	l := limiter{qps: 0.1}
	steps := []struct {
		name string
		now  float64
		qps  float64 // set before trying, if not zero
		want bool
	}{
		{"full bucket: at once", 0, 0, true},
		{"empty", 1, 0, false},
		{"still empty at 9.9 s", 9.9, 0, false},
		{"refilled after 10 s", 10, 0, true},
		{"a rate change grants nothing extra", 10.5, 1, false},
		{"faster rate refills sooner", 11, 1, true},
		{"rate 0 stops everything", 100, -1, false},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			switch {
			case s.qps > 0:
				l.setQPS(s.qps)
			case s.qps < 0:
				l.setQPS(0)
			}
			if got := l.tryAccept(t0.Add(time.Duration(s.now * float64(time.Second)))); got != s.want {
				t.Errorf("tryAccept = %v, want %v", got, s.want)
			}
		})
	}
}

func TestNodeQueue(t *testing.T) {
	var q nodeQueue
	q.add("a")
	q.add("b")
	q.add("a")
	q.add("c")
	q.remove("b")
	q.remove("zzz")
	if got := q.names; len(got) != 2 || got[0] != "a" || got[1] != "c" || !q.has("c") || q.has("b") {
		t.Errorf("queue = %v", got)
	}
}
