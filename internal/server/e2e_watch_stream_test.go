package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
)

func TestWatchSelectors(t *testing.T) {
	e := newAPIEnv(t, Config{})
	ctx := context.Background()
	ns := e.namespace(t, "wsel")
	cmc := e.cs.CoreV1().ConfigMaps(ns)
	w, err := cmc.Watch(ctx, metav1.ListOptions{LabelSelector: "role=web"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	relabel := func(name, role, data string) {
		t.Helper()
		cm, err := cmc.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cm.Labels["role"] = role
		cm.Data["k"] = data
		if _, err := cmc.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// Each step is followed by the event a selecting watcher must see; a
	// change it must not see is proved absent by the next step's event
	// arriving first.
	steps := []struct {
		name   string
		do     func()
		want   string
		verify func(t *testing.T, ev watch.Event)
	}{
		{"created matching", func() {
			if _, err := cmc.Create(ctx, testConfigMap("m", map[string]string{"role": "web"}), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}, "ADDED m", nil},
		{"changed while matching", func() { relabel("m", "web", "v2") }, "MODIFIED m", nil},
		// Upstream sends the last state that matched, at the new version.
		{"stops matching", func() { relabel("m", "db", "v3") }, "DELETED m", func(t *testing.T, ev watch.Event) {
			if cm := ev.Object.(*corev1.ConfigMap); cm.Labels["role"] != "web" || cm.Data["k"] != "v2" {
				t.Errorf("DELETED carries %v %v, want the last matching state", cm.Labels, cm.Data)
			}
		}},
		{"changed while not matching, then a matching object appears", func() {
			relabel("m", "db", "v4")
			if _, err := cmc.Create(ctx, testConfigMap("n", map[string]string{"role": "web"}), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}, "ADDED n", nil},
		{"starts matching again", func() { relabel("m", "web", "v5") }, "ADDED m", func(t *testing.T, ev watch.Event) {
			if cm := ev.Object.(*corev1.ConfigMap); cm.Data["k"] != "v5" {
				t.Errorf("ADDED carries %v, want the new state", cm.Data)
			}
		}},
		{"deleted while matching", func() {
			if err := cmc.Delete(ctx, "n", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		}, "DELETED n", nil},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			st.do()
			evs := readUntil(t, w, st.want)
			if len(evs) != 1 {
				t.Fatalf("events %v, want only %q", describeAll(evs), st.want)
			}
			if st.verify != nil {
				st.verify(t, evs[0])
			}
		})
	}

	t.Run("initial events are filtered too", func(t *testing.T) {
		if _, err := cmc.Create(ctx, testConfigMap("other", map[string]string{"role": "db"}), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		cases := []struct {
			rv, sentinel string
			want         []string
		}{
			{"", "unset", []string{"ADDED m", "ADDED unset"}},
			{"0", "zero", []string{"ADDED m", "ADDED unset", "ADDED zero"}},
		}
		for _, tc := range cases {
			w, err := cmc.Watch(ctx, metav1.ListOptions{LabelSelector: "role=web", ResourceVersion: tc.rv})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := cmc.Create(ctx, testConfigMap(tc.sentinel, map[string]string{"role": "web"}), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			evs := readUntil(t, w, "ADDED "+tc.sentinel)
			w.Stop()
			if got := describeAll(evs); !slices.Equal(got, tc.want) {
				t.Errorf("resourceVersion %q: events %v, want %v", tc.rv, got, tc.want)
			}
		}
	})

	// A kubelet watches the pods bound to its node: binding a pod is an
	// ADDED for it even though the pod existed before.
	t.Run("field selector follows a binding", func(t *testing.T) {
		pc := e.cs.CoreV1().Pods(ns)
		w, err := pc.Watch(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=node-a"})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		for _, p := range []*corev1.Pod{testPod("later", ""), testPod("elsewhere", "node-b")} {
			if _, err := pc.Create(ctx, p, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		if err := pc.Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "later"},
			Target: corev1.ObjectReference{Kind: "Node", Name: "node-a"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		evs := readUntil(t, w, "ADDED later")
		if len(evs) != 1 || evs[0].Object.(*corev1.Pod).Spec.NodeName != "node-a" {
			t.Fatalf("events %v, want only the bound pod", describeAll(evs))
		}
	})
}

// TestWatchExpired: a watch from a version the server no longer has the
// history for gets a 200 and one ERROR event with a 410 Status, as
// upstream, so the client relists.
func TestWatchExpired(t *testing.T) {
	// A small event window per resource makes history expire after a few
	// writes, as compaction and watch-cache turnover do on a busy cluster.
	e := newAPIEnv(t, Config{WatchCacheCapacity: 5})
	ctx := context.Background()
	ns := e.namespace(t, "expired")
	cmc := e.cs.CoreV1().ConfigMaps(ns)
	cm, err := cmc.Create(ctx, testConfigMap("churn", nil), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	oldRV := cm.ResourceVersion
	for i := range 20 {
		cm.Data["k"] = strconv.Itoa(i)
		if cm, err = cmc.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	e.compact(t)

	for name, cs := range map[string]*kubernetes.Clientset{"protobuf": e.cs, "json": e.jcs} {
		t.Run(name, func(t *testing.T) {
			w, err := cs.CoreV1().ConfigMaps(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: oldRV})
			if err != nil {
				t.Fatalf("a too-old watch is a 200 with an ERROR event, not a failed request: %v", err)
			}
			evs := readToEnd(t, w)
			if len(evs) != 1 || evs[0].Type != watch.Error {
				t.Fatalf("events %v, want one ERROR", describeAll(evs))
			}
			st, ok := evs[0].Object.(*metav1.Status)
			if !ok || st.Code != http.StatusGone || st.Reason != metav1.StatusReasonExpired {
				t.Fatalf("ERROR event %#v, want a 410 Expired Status", evs[0].Object)
			}
		})
	}

	t.Run("a current version still works", func(t *testing.T) {
		w, err := cmc.Watch(ctx, metav1.ListOptions{ResourceVersion: cm.ResourceVersion})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		if err := cmc.Delete(ctx, "churn", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		if evs := readUntil(t, w, "DELETED churn"); len(evs) != 1 {
			t.Fatalf("events %v", describeAll(evs))
		}
	})
}

func TestWatchEncodings(t *testing.T) {
	e := newAPIEnv(t, Config{})
	ctx := context.Background()
	ns := e.namespace(t, "wenc")
	cmc := e.cs.CoreV1().ConfigMaps(ns)
	if _, err := cmc.Create(ctx, testConfigMap("first", map[string]string{"app": "wenc"}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	t.Run("typed clients", func(t *testing.T) {
		for name, cs := range map[string]*kubernetes.Clientset{"protobuf": e.cs, "json": e.jcs} {
			t.Run(name, func(t *testing.T) {
				w, err := cs.CoreV1().ConfigMaps(ns).Watch(ctx, metav1.ListOptions{})
				if err != nil {
					t.Fatal(err)
				}
				defer w.Stop()
				evs := readUntil(t, w, "ADDED first")
				cm, ok := evs[0].Object.(*corev1.ConfigMap)
				if !ok || cm.Data["k"] != "v" || cm.Labels["app"] != "wenc" || cm.UID == "" {
					t.Fatalf("event object %#v", evs[0].Object)
				}
			})
		}
	})

	t.Run("metadata client", func(t *testing.T) {
		w, err := e.meta.Resource(corev1.SchemeGroupVersion.WithResource("configmaps")).Namespace(ns).
			Watch(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		evs := readUntil(t, w, "ADDED first")
		p, ok := evs[0].Object.(*metav1.PartialObjectMetadata)
		if !ok || p.Labels["app"] != "wenc" || p.ResourceVersion == "" {
			t.Fatalf("event object %#v, want PartialObjectMetadata", evs[0].Object)
		}
		if _, err := cmc.Create(ctx, testConfigMap("second", nil), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		readUntil(t, w, "ADDED second")
	})

	// On the wire: JSON is one {"type","object"} document per line;
	// protobuf is length-prefixed WatchEvent frames whose objects carry the
	// k8s envelope. timeoutSeconds ends the stream so it can be read whole.
	path := "/api/v1/namespaces/" + ns + "/configmaps?watch=true&timeoutSeconds=1&fieldSelector=metadata.name%3Dfirst"
	cases := []struct {
		name, accept, wantType string
		frames                 func(t *testing.T, body []byte) []metav1.WatchEvent
	}{
		{"json stream", "application/json", "application/json", jsonFrames},
		{"protobuf stream", "application/vnd.kubernetes.protobuf", "application/vnd.kubernetes.protobuf;stream=watch", protoFrames},
	}
	t.Run("yaml is not a stream format", func(t *testing.T) {
		// Upstream has no YAML stream serializer and answers 406.
		r := e.do(t, http.MethodGet, path, map[string]string{"Accept": "application/yaml"}, nil)
		checkRawStatus(t, r, http.StatusNotAcceptable, metav1.StatusReasonNotAcceptable)
	})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do(t, http.MethodGet, path, map[string]string{"Accept": tc.accept}, nil)
			if r.code != http.StatusOK || r.header.Get("Content-Type") != tc.wantType {
				t.Fatalf("%d %q, want 200 %q: %s", r.code, r.header.Get("Content-Type"), tc.wantType, r.body)
			}
			frames := tc.frames(t, r.body)
			if len(frames) != 1 || frames[0].Type != string(watch.Added) {
				t.Fatalf("%d frames, want one ADDED", len(frames))
			}
		})
	}
}

func TestWatchTable(t *testing.T) {
	e := newAPIEnv(t, Config{})
	ctx := context.Background()
	ns := e.namespace(t, "wtable")
	for _, name := range []string{"one", "two"} {
		if _, err := e.cs.CoreV1().ConfigMaps(ns).Create(ctx, testConfigMap(name, nil), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// kubectl get -w: each event is a one-row Table; only the first
	// carries the column definitions.
	r := e.do(t, http.MethodGet, "/api/v1/namespaces/"+ns+"/configmaps?watch=true&timeoutSeconds=1",
		map[string]string{"Accept": acceptTableV1}, nil)
	if r.code != http.StatusOK {
		t.Fatalf("%d: %s", r.code, r.body)
	}
	var rows []string
	sc := bufio.NewScanner(bytes.NewReader(r.body))
	for i := 0; sc.Scan(); i++ {
		var ev struct {
			Type   string       `json:"type"`
			Object metav1.Table `json:"object"`
		}
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("frame %q: %v", sc.Bytes(), err)
		}
		if ev.Type != string(watch.Added) || ev.Object.Kind != "Table" || len(ev.Object.Rows) != 1 {
			t.Fatalf("frame %d: %s %s with %d rows", i, ev.Type, ev.Object.Kind, len(ev.Object.Rows))
		}
		if hasCols := len(ev.Object.ColumnDefinitions) > 0; hasCols != (i == 0) {
			t.Errorf("frame %d has %d column definitions", i, len(ev.Object.ColumnDefinitions))
		}
		rows = append(rows, ev.Object.Rows[0].Cells[0].(string))
	}
	if !slices.Equal(rows, []string{"one", "two"}) {
		t.Fatalf("rows %v", rows)
	}
}

func jsonFrames(t *testing.T, body []byte) []metav1.WatchEvent {
	t.Helper()
	var out []metav1.WatchEvent
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var ev metav1.WatchEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("frame %q: %v", sc.Bytes(), err)
		}
		var cm corev1.ConfigMap
		if err := json.Unmarshal(ev.Object.Raw, &cm); err != nil || cm.Kind != "ConfigMap" || cm.Name != "first" {
			t.Fatalf("frame object %s: %v", ev.Object.Raw, err)
		}
		out = append(out, ev)
	}
	return out
}

func protoFrames(t *testing.T, body []byte) []metav1.WatchEvent {
	t.Helper()
	var out []metav1.WatchEvent
	for len(body) > 0 {
		if len(body) < 4 {
			t.Fatalf("truncated frame header")
		}
		n := binary.BigEndian.Uint32(body[:4])
		if uint32(len(body)-4) < n {
			t.Fatalf("frame of %d bytes, %d left", n, len(body)-4)
		}
		var ev metav1.WatchEvent
		if err := ev.Unmarshal(body[4 : 4+n]); err != nil {
			t.Fatal(err)
		}
		unk := protoBody(t, ev.Object.Raw)
		var cm corev1.ConfigMap
		if unk.Kind != "ConfigMap" || cm.Unmarshal(unk.Raw) != nil || cm.Name != "first" {
			t.Fatalf("frame object of kind %s", unk.Kind)
		}
		out = append(out, ev)
		body = body[4+n:]
	}
	return out
}
