package scheduler

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	configv1 "k8s.io/kube-scheduler/config/v1"

	"github.com/rudder-dev/rudder/internal/scheduler/framework"
)

// DefaultSchedulerName is the profile pods get when spec.schedulerName is
// unset.
const DefaultSchedulerName = "default-scheduler"

// defaultPlugins are upstream's default MultiPoint plugins, in order, with
// their score weights (0: not a score plugin, or weight 1).
var defaultPlugins = []configv1.Plugin{
	{Name: "SchedulingGates"},
	{Name: "PrioritySort"},
	{Name: "NodeUnschedulable"},
	{Name: "NodeName"},
	{Name: "TaintToleration", Weight: ptr(int32(3))},
	{Name: "NodeAffinity", Weight: ptr(int32(2))},
	{Name: "NodePorts"},
	{Name: "NodeResourcesFit", Weight: ptr(int32(1))},
	{Name: "VolumeRestrictions"},
	{Name: "NodeVolumeLimits"},
	{Name: "VolumeBinding"},
	{Name: "VolumeZone"},
	{Name: "PodTopologySpread", Weight: ptr(int32(2))},
	{Name: "InterPodAffinity", Weight: ptr(int32(2))},
	{Name: "DefaultPreemption"},
	{Name: "NodeResourcesBalancedAllocation", Weight: ptr(int32(1))},
	{Name: "ImageLocality", Weight: ptr(int32(1))},
	{Name: "DefaultBinder"},
}

func ptr[T any](v T) *T { return &v }

// LoadConfig reads a KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1)
// from a YAML or JSON file.
func LoadConfig(path string) (*configv1.KubeSchedulerConfiguration, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseConfig(data)
}

// ParseConfig decodes a KubeSchedulerConfiguration, rejecting unknown
// fields and other kinds.
func ParseConfig(data []byte) (*configv1.KubeSchedulerConfiguration, error) {
	js, err := utilyaml.ToJSON(data)
	if err != nil {
		return nil, fmt.Errorf("scheduler config: %w", err)
	}
	scheme := runtime.NewScheme()
	if err := configv1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	codecs := serializer.NewCodecFactory(scheme, serializer.EnableStrict)
	obj, gvk, err := codecs.UniversalDeserializer().Decode(js, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("scheduler config: %w", err)
	}
	cfg, ok := obj.(*configv1.KubeSchedulerConfiguration)
	if !ok {
		return nil, fmt.Errorf("scheduler config: want KubeSchedulerConfiguration, got %v", gvk)
	}
	return cfg, nil
}

// newArgs returns the typed arguments of the plugins that take some.
func newArgs(name string) runtime.Object {
	switch name {
	case "NodeResourcesFit":
		return &configv1.NodeResourcesFitArgs{}
	case "NodeResourcesBalancedAllocation":
		return &configv1.NodeResourcesBalancedAllocationArgs{}
	case "PodTopologySpread":
		return &configv1.PodTopologySpreadArgs{}
	case "InterPodAffinity":
		return &configv1.InterPodAffinityArgs{}
	case "NodeAffinity":
		return &configv1.NodeAffinityArgs{}
	case "VolumeBinding":
		return &configv1.VolumeBindingArgs{}
	case "DefaultPreemption":
		return &configv1.DefaultPreemptionArgs{}
	}
	return nil
}

// profileSpec is a profile's resolved plugin sets per extension point.
type profileSpec struct {
	name       string
	percentage int32
	multi      []configv1.Plugin
	points     map[string]*configv1.PluginSet
	args       map[string]runtime.Object
}

// resolveProfiles applies upstream's defaulting: one default-scheduler
// profile when none are given; each profile's MultiPoint is the defaults
// plus the user's (user disables, "*" removes all defaults).
func resolveProfiles(cfg *configv1.KubeSchedulerConfiguration) ([]profileSpec, error) {
	profiles := cfg.Profiles
	if len(profiles) == 0 {
		profiles = []configv1.KubeSchedulerProfile{{}}
	}
	var global int32
	if cfg.PercentageOfNodesToScore != nil {
		global = *cfg.PercentageOfNodesToScore
	}
	seen := map[string]bool{}
	var out []profileSpec
	for _, p := range profiles {
		spec := profileSpec{name: DefaultSchedulerName, percentage: global, points: map[string]*configv1.PluginSet{}, args: map[string]runtime.Object{}}
		if p.SchedulerName != nil && *p.SchedulerName != "" {
			spec.name = *p.SchedulerName
		}
		if seen[spec.name] {
			return nil, fmt.Errorf("scheduler config: duplicate profile %q", spec.name)
		}
		seen[spec.name] = true
		if p.PercentageOfNodesToScore != nil {
			spec.percentage = *p.PercentageOfNodesToScore
		}
		if spec.percentage < 0 || spec.percentage > 100 {
			return nil, fmt.Errorf("scheduler config: percentageOfNodesToScore %d not in [0, 100]", spec.percentage)
		}
		var user configv1.Plugins
		if p.Plugins != nil {
			user = *p.Plugins
		}
		spec.multi = mergePluginSet(defaultPlugins, user.MultiPoint)
		for point, set := range map[string]configv1.PluginSet{
			"PreEnqueue": user.PreEnqueue, "QueueSort": user.QueueSort, "PreFilter": user.PreFilter, "Filter": user.Filter,
			"PostFilter": user.PostFilter, "PreScore": user.PreScore, "Score": user.Score, "Reserve": user.Reserve,
			"Permit": user.Permit, "PreBind": user.PreBind, "Bind": user.Bind, "PostBind": user.PostBind,
		} {
			set := set
			spec.points[point] = &set
		}
		for _, pc := range p.PluginConfig {
			args := newArgs(pc.Name)
			if args == nil {
				return nil, fmt.Errorf("scheduler config: plugin %q takes no arguments", pc.Name)
			}
			raw := pc.Args.Raw
			if len(raw) == 0 && pc.Args.Object != nil {
				args = pc.Args.Object
			} else if len(raw) > 0 {
				dec := json.NewDecoder(bytes.NewReader(raw))
				if err := dec.Decode(args); err != nil {
					return nil, fmt.Errorf("scheduler config: arguments of %q: %w", pc.Name, err)
				}
			}
			spec.args[pc.Name] = args
		}
		out = append(out, spec)
	}
	return out, nil
}

// mergePluginSet applies a user set to defaults: disabled names (or "*")
// drop defaults, enabled ones are appended or replace a default's weight.
func mergePluginSet(defaults []configv1.Plugin, user configv1.PluginSet) []configv1.Plugin {
	var out []configv1.Plugin
	all := slices.ContainsFunc(user.Disabled, func(p configv1.Plugin) bool { return p.Name == "*" })
	for _, d := range defaults {
		if all || slices.ContainsFunc(user.Disabled, func(p configv1.Plugin) bool { return p.Name == d.Name }) {
			continue
		}
		out = append(out, d)
	}
	for _, e := range user.Enabled {
		if i := slices.IndexFunc(out, func(p configv1.Plugin) bool { return p.Name == e.Name }); i >= 0 {
			out[i] = e
			continue
		}
		out = append(out, e)
	}
	return out
}

// buildProfile instantiates a profile's plugins from the registry and
// sorts them into extension points.
func buildProfile(ctx context.Context, spec profileSpec, registry map[string]framework.Factory, h *handle) (*Profile, error) {
	p := &Profile{Name: spec.name, PercentageOfNodesToScore: spec.percentage, handle: h, events: map[string][]framework.ClusterEventWithHint{},
		waiting: newWaitingPods(), metrics: newProfileMetrics(spec.name)}
	h.profile = p
	instances := map[string]framework.Plugin{}
	instance := func(name string) (framework.Plugin, error) {
		if pl, ok := instances[name]; ok {
			return pl, nil
		}
		f, ok := registry[name]
		if !ok {
			return nil, fmt.Errorf("scheduler config: profile %q: plugin %q does not exist", spec.name, name)
		}
		pl, err := f(ctx, spec.args[name], h)
		if err != nil {
			return nil, fmt.Errorf("plugin %q: %w", name, err)
		}
		instances[name] = pl
		return pl, nil
	}
	weights := map[string]int64{}
	for _, mp := range spec.multi {
		if _, err := instance(mp.Name); err != nil {
			return nil, err
		}
		if mp.Weight != nil {
			weights[mp.Name] = int64(*mp.Weight)
		}
	}
	// For each point: MultiPoint plugins implementing it, minus the
	// point's disabled, plus its enabled.
	forPoint := func(point string, implements func(framework.Plugin) bool) ([]framework.Plugin, error) {
		set := spec.points[point]
		var names []configv1.Plugin
		for _, mp := range spec.multi {
			if implements(instances[mp.Name]) {
				names = append(names, configv1.Plugin{Name: mp.Name})
			}
		}
		names = mergePluginSet(names, *set)
		var out []framework.Plugin
		for _, n := range names {
			pl, err := instance(n.Name)
			if err != nil {
				return nil, err
			}
			if !implements(pl) {
				return nil, fmt.Errorf("scheduler config: plugin %q does not extend %s", n.Name, point)
			}
			if n.Weight != nil && point == "Score" {
				weights[n.Name] = int64(*n.Weight)
			}
			out = append(out, pl)
		}
		return out, nil
	}
	is := func(f func(framework.Plugin) bool) func(framework.Plugin) bool { return f }
	type point struct {
		name string
		impl func(framework.Plugin) bool
		set  func(framework.Plugin)
	}
	points := []point{
		{"PreEnqueue", is(func(pl framework.Plugin) bool { _, ok := pl.(framework.PreEnqueuePlugin); return ok }), func(pl framework.Plugin) { p.preEnqueue = append(p.preEnqueue, pl.(framework.PreEnqueuePlugin)) }},
		{"QueueSort", is(func(pl framework.Plugin) bool { _, ok := pl.(framework.QueueSortPlugin); return ok }), func(pl framework.Plugin) { p.queueSort = pl.(framework.QueueSortPlugin) }},
		{"PreFilter", is(func(pl framework.Plugin) bool { _, ok := pl.(framework.PreFilterPlugin); return ok }), func(pl framework.Plugin) { p.preFilter = append(p.preFilter, pl.(framework.PreFilterPlugin)) }},
		{"Filter", is(func(pl framework.Plugin) bool { _, ok := pl.(framework.FilterPlugin); return ok }), func(pl framework.Plugin) { p.filter = append(p.filter, pl.(framework.FilterPlugin)) }},
		{"PostFilter", is(func(pl framework.Plugin) bool { _, ok := pl.(framework.PostFilterPlugin); return ok }), func(pl framework.Plugin) { p.postFilter = append(p.postFilter, pl.(framework.PostFilterPlugin)) }},
		{"PreScore", is(func(pl framework.Plugin) bool { _, ok := pl.(framework.PreScorePlugin); return ok }), func(pl framework.Plugin) { p.preScore = append(p.preScore, pl.(framework.PreScorePlugin)) }},
		{"Score", is(func(pl framework.Plugin) bool { _, ok := pl.(framework.ScorePlugin); return ok }), func(pl framework.Plugin) {
			w := weights[pl.Name()]
			if w == 0 {
				w = 1
			}
			ws := weightedScore{ScorePlugin: pl.(framework.ScorePlugin), weight: w}
			ws.batch, _ = pl.(framework.BatchScorer)
			ws.normalize = ws.ScorePlugin.ScoreExtensions()
			p.score = append(p.score, ws)
		}},
		{"Reserve", is(func(pl framework.Plugin) bool { _, ok := pl.(framework.ReservePlugin); return ok }), func(pl framework.Plugin) { p.reserve = append(p.reserve, pl.(framework.ReservePlugin)) }},
		{"Permit", is(func(pl framework.Plugin) bool { _, ok := pl.(framework.PermitPlugin); return ok }), func(pl framework.Plugin) { p.permit = append(p.permit, pl.(framework.PermitPlugin)) }},
		{"PreBind", is(func(pl framework.Plugin) bool { _, ok := pl.(framework.PreBindPlugin); return ok }), func(pl framework.Plugin) { p.preBind = append(p.preBind, pl.(framework.PreBindPlugin)) }},
		{"Bind", is(func(pl framework.Plugin) bool { _, ok := pl.(framework.BindPlugin); return ok }), func(pl framework.Plugin) { p.bind = append(p.bind, pl.(framework.BindPlugin)) }},
		{"PostBind", is(func(pl framework.Plugin) bool { _, ok := pl.(framework.PostBindPlugin); return ok }), func(pl framework.Plugin) { p.postBind = append(p.postBind, pl.(framework.PostBindPlugin)) }},
	}
	for _, pt := range points {
		list, err := forPoint(pt.name, pt.impl)
		if err != nil {
			return nil, err
		}
		if pt.name == "QueueSort" && len(list) != 1 {
			return nil, fmt.Errorf("scheduler config: profile %q must have exactly one QueueSort plugin, has %d", spec.name, len(list))
		}
		if pt.name == "Bind" && len(list) == 0 {
			return nil, fmt.Errorf("scheduler config: profile %q has no Bind plugin", spec.name)
		}
		for _, pl := range list {
			pt.set(pl)
		}
	}
	for name, pl := range instances {
		if ext, ok := pl.(framework.EnqueueExtensions); ok {
			evs, err := ext.EventsToRegister(ctx)
			if err != nil {
				return nil, fmt.Errorf("plugin %q events: %w", name, err)
			}
			p.events[name] = evs
		} else if _, ok := pl.(framework.FilterPlugin); ok {
			// Upstream's rule for plugins that do not say: any event.
			p.events[name] = []framework.ClusterEventWithHint{{Event: framework.ClusterEvent{Resource: framework.WildCardResource, ActionType: framework.All}}}
		}
	}
	return p, nil
}
