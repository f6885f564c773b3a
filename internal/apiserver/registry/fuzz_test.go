package registry

// FuzzStrategies runs every resource's strategy — defaults, create and
// update preparation, validation, selectable fields, table rows, /scale,
// conversion to and from the stored shape —
// on objects built from the fuzzer's bytes, the way the API server calls
// them. A client can send any JSON, so every func must take any object a
// JSON body decodes to without panicking: a nil pointer where a default
// would be, an empty slice, an enum value it does not know.
//
//	go test -run='^$' -fuzz=FuzzStrategies -fuzztime=60s ./internal/apiserver/registry

import (
	"encoding/json"
	"fmt"
	"runtime"
	"runtime/debug"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/randfill"
)

// fuzzWords are the strings objects get most of the time: enum values and
// names the strategies branch on, so the fuzzer reaches past validation's
// first "unsupported value". The rest are short strings from the input.
var fuzzWords = []string{
	"", "a", "web", "default", "kube-system", "app", "x.io/y", "1", "0", "-1", "10%", "150%", "*", "/",
	"Always", "Never", "OnFailure", "IfNotPresent", "TCP", "UDP", "SCTP", "http", "8080",
	"ClusterIP", "NodePort", "LoadBalancer", "ExternalName", "None", "Local", "Cluster",
	"IPv4", "IPv6", "SingleStack", "PreferDualStack", "RequireDualStack", "10.0.0.1", "fd00::1",
	"RollingUpdate", "Recreate", "OnDelete", "Parallel", "OrderedReady", "Retain", "Delete",
	"Exists", "Equal", "In", "NotIn", "DoesNotExist", "Gt", "Lt", "NoSchedule", "NoExecute", "PreferNoSchedule",
	"Pending", "Running", "Succeeded", "Failed", "True", "False", "Unknown", "Ready", "PodScheduled", "Complete",
	"Allow", "Forbid", "Replace", "kubernetes", "v1", "apps/v1", "Pod", "Node", "User", "Group", "ServiceAccount",
	"rbac.authorization.k8s.io", "get", "list", "*/5 * * * *", "@hourly", "TZ", "Europe/Paris",
	"Background", "Foreground", "Orphan", "File", "FallbackToLogsOnError", "ClusterFirst", "Default",
	"RuntimeDefault", "Localhost", "Unconfined", "Indexed", "NonIndexed", "FailJob", "Ignore", "Count", "FailIndex",
	"TerminatingOrFailed", "Failed", "PodFailurePolicy", "Normal", "Warning", "Opaque", "kubernetes.io/tls",
	"tls.crt", "ReadWriteOnce", "cpu", "memory", "pods", "Immediate", "RestartContainer", "NotRequired",
}

// newFiller builds objects from fuzz bytes: short slices, maps of a few
// entries, words from fuzzWords, and only values a JSON body can carry.
func newFiller(data []byte) *randfill.Filler {
	return randfill.NewFromGoFuzz(data).NilChance(0.3).NumElements(0, 3).MaxDepth(12).Funcs(
		func(s *string, c randfill.Continue) {
			if n := c.Uint64(); n%4 != 0 {
				*s = fuzzWords[int(n/4)%len(fuzzWords)]
			} else {
				*s = c.String(8)
			}
		},
		func(q *resource.Quantity, c randfill.Continue) {
			*q = *resource.NewMilliQuantity(int64(c.Uint64()%1_000_000)-1000, resource.DecimalSI)
		},
		func(v *intstr.IntOrString, c randfill.Continue) {
			if c.Bool() {
				*v = intstr.FromInt32(int32(c.Uint64()%200) - 50)
			} else {
				var s string
				c.Fill(&s)
				*v = intstr.FromString(s)
			}
		},
		func(t *metav1.Time, c randfill.Continue) {
			*t = metav1.Unix(int64(c.Uint64()%2_000_000_000), 0)
		},
		func(t *metav1.MicroTime, c randfill.Continue) {
			*t = metav1.NewMicroTime(metav1.Unix(int64(c.Uint64()%2_000_000_000), 0).Time)
		},
		func(r *kruntime.RawExtension, c randfill.Continue) {
			*r = kruntime.RawExtension{}
		},
		func(m *metav1.FieldsV1, c randfill.Continue) {
			m.Raw = []byte(`{"f:metadata":{}}`)
		},
	)
}

// fillWire fills a new object of res and passes it through JSON, so it is
// exactly what a client's body decodes to. nil when the filler built
// something JSON cannot carry.
func fillWire(f *randfill.Filler, res *Resource) kruntime.Object {
	obj := res.New()
	f.Fill(obj)
	data, err := json.Marshal(obj)
	if err != nil {
		return nil
	}
	out := res.New()
	if err := json.Unmarshal(data, out); err != nil {
		return nil
	}
	out.GetObjectKind().SetGroupVersionKind(res.GroupVersionKind())
	return out
}

func FuzzStrategies(f *testing.F) {
	resources := All()
	for i := range resources {
		f.Add(uint8(i), []byte{})
		f.Add(uint8(i), []byte("\x01\x02\x03\x04\x05\x06\x07\x08 seed for "+resources[i].Resource))
		f.Add(uint8(i), []byte(fmt.Sprintf("%064d", i)))
	}
	f.Fuzz(func(t *testing.T, idx uint8, data []byte) {
		res := resources[int(idx)%len(resources)]
		fill := newFiller(data)
		obj, old := fillWire(fill, res), fillWire(fill, res)
		if obj == nil || old == nil {
			return
		}
		objJSON, _ := json.Marshal(obj)
		oldJSON, _ := json.Marshal(old)
		// The fuzzer has no per-input time limit: a strategy that loops
		// would stall it silently. Strategies are microseconds of work.
		failed := make(chan string, 1)
		go func() { failed <- runStrategies(res, obj, old) }()
		select {
		case msg := <-failed:
			if msg != "" {
				t.Fatalf("%s: %s\nobject: %s\nold: %s", res.Resource, msg, objJSON, oldJSON)
			}
		case <-time.After(10 * time.Second):
			buf := make([]byte, 1<<20)
			buf = buf[:runtime.Stack(buf, true)]
			t.Fatalf("%s: strategies still running after 10s\nobject: %s\nold: %s\n%s", res.Resource, objJSON, oldJSON, buf)
		}
	})
}

// runStrategies calls res's strategy on a create of obj and an update of
// old to obj, in the API server's order, and returns what panicked.
func runStrategies(res *Resource, obj, old kruntime.Object) (failure string) {
	step := "create"
	defer func() {
		if p := recover(); p != nil {
			failure = fmt.Sprintf("%s panicked: %v\n%s", step, p, debug.Stack())
		}
	}()
	if res.Default != nil {
		res.Default(obj)
	}
	if res.PrepareForCreate != nil {
		res.PrepareForCreate(obj)
	}
	step = "validate"
	if res.Validate != nil {
		res.Validate(obj)
	}
	step = "read paths"
	readPaths(res, obj)

	step = "update"
	if res.Default != nil {
		res.Default(old)
		res.Default(obj)
	}
	if res.PrepareForUpdate != nil {
		res.PrepareForUpdate(obj, old)
	}
	step = "validate update"
	if res.ValidateUpdate != nil {
		res.ValidateUpdate(obj, old)
	} else if res.Validate != nil {
		res.Validate(obj)
	}
	step = "validate status update"
	if res.ValidateStatusUpdate != nil {
		res.ValidateStatusUpdate(obj, old)
	}
	step = "read paths after update"
	readPaths(res, obj)
	if v := res.Storage; v != nil {
		step = "storage conversion"
		v.FromStorage(v.ToStorage(obj))
	}
	if res.Scale != nil {
		step = "scale"
		res.Scale.Set(obj, 3)
		res.Scale.Get(obj)
	}
	return ""
}

// readPaths calls what lists, watches and tables call on stored objects.
func readPaths(res *Resource, obj kruntime.Object) {
	if res.Fields != nil {
		res.Fields(obj)
	}
	if res.Table != nil {
		if cells := res.Table.Row(obj); len(cells) != len(res.Table.Columns) {
			panic(fmt.Sprintf("table row has %d cells for %d columns", len(cells), len(res.Table.Columns)))
		}
	}
	if res.Scale != nil {
		res.Scale.Get(obj)
	}
}
