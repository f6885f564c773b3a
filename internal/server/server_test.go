package server

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/rudder-dev/rudder/internal/storage"
)

// startServer runs a real server (embedded etcd in a temp dir, a loopback
// port) for the duration of the test.
func startServer(t *testing.T) (*Server, *kubernetes.Clientset) {
	t.Helper()
	srv, cfg := startTestServer(t, Config{})
	return srv, kubernetes.NewForConfigOrDie(cfg)
}

// startTestServer starts a server with cfg (DataDir and port filled in),
// stopped when the test ends, and returns its admin client config.
func startTestServer(t *testing.T, cfg Config) (*Server, *rest.Config) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cfg.DataDir = t.TempDir()
	cfg.HTTPSPort = 0
	// These tests are about the API server: nothing else writes unless
	// a test asks for the scheduler and controllers.
	if cfg.Controllers == nil {
		cfg.Controllers = []string{"-*"}
		cfg.DisableScheduler = true
	}
	srv, err := Start(ctx, cfg)
	if err != nil {
		cancel()
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		srv.Stop()
	})
	rc, err := clientcmd.BuildConfigFromFlags("", srv.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	return srv, rc
}

func TestServerSmoke(t *testing.T) {
	_, cs := startServer(t)
	ctx := context.Background()

	t.Run("system namespaces exist", func(t *testing.T) {
		for _, name := range systemNamespaces {
			if _, err := cs.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{}); err != nil {
				t.Errorf("namespace %s: %v", name, err)
			}
		}
	})

	t.Run("create get update conflict delete", func(t *testing.T) {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c1"}, Data: map[string]string{"k": "v"}}
		created, err := cs.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if created.UID == "" || created.ResourceVersion == "" || created.CreationTimestamp.IsZero() {
			t.Fatalf("server did not fill metadata: %+v", created.ObjectMeta)
		}
		if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); !apierrors.IsAlreadyExists(err) {
			t.Fatalf("second create: want AlreadyExists, got %v", err)
		}
		created.Data["k"] = "v2"
		updated, err := cs.CoreV1().ConfigMaps("default").Update(ctx, created, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if updated.ResourceVersion == created.ResourceVersion {
			t.Fatal("resourceVersion did not change on update")
		}
		// created still carries the old resourceVersion: a stale write.
		created.Data["k"] = "stale"
		if _, err := cs.CoreV1().ConfigMaps("default").Update(ctx, created, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
			t.Fatalf("stale update: want Conflict, got %v", err)
		}
		got, err := cs.CoreV1().ConfigMaps("default").Get(ctx, "c1", metav1.GetOptions{})
		if err != nil || got.Data["k"] != "v2" {
			t.Fatalf("get after conflict: %v %v", got.Data, err)
		}
		if err := cs.CoreV1().ConfigMaps("default").Delete(ctx, "c1", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := cs.CoreV1().ConfigMaps("default").Get(ctx, "c1", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("get after delete: want NotFound, got %v", err)
		}
	})

	t.Run("watch sees a create", func(t *testing.T) {
		list, err := cs.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		w, err := cs.CoreV1().ConfigMaps("default").Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "w1"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		select {
		case ev := <-w.ResultChan():
			cm, ok := ev.Object.(*corev1.ConfigMap)
			if ev.Type != "ADDED" || !ok || cm.Name != "w1" {
				t.Fatalf("unexpected event %s %#v", ev.Type, ev.Object)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("no watch event within 10s")
		}
	})

	t.Run("namespace must exist", func(t *testing.T) {
		_, err := cs.CoreV1().ConfigMaps("nope").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{})
		if !apierrors.IsNotFound(err) {
			t.Fatalf("want NotFound for a missing namespace, got %v", err)
		}
	})
}

// TestExternalEtcd runs the server against an etcd it does not own
// (--etcd-servers): data written through one server is there for the next.
func TestExternalEtcd(t *testing.T) {
	ctx := context.Background()
	etcd, err := storage.StartEmbedded(ctx, storage.EmbeddedConfig{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer etcd.Close()
	dataDir := t.TempDir()
	start := func() (*Server, *kubernetes.Clientset) {
		srv, err := Start(ctx, Config{DataDir: dataDir, EtcdServers: etcd.Endpoints})
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := clientcmd.BuildConfigFromFlags("", srv.Kubeconfig)
		if err != nil {
			t.Fatal(err)
		}
		return srv, kubernetes.NewForConfigOrDie(cfg)
	}
	srv, cs := start()
	if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kept"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	srv.Stop()
	srv, cs = start()
	defer srv.Stop()
	if _, err := cs.CoreV1().ConfigMaps("default").Get(ctx, "kept", metav1.GetOptions{}); err != nil {
		t.Fatalf("object written before the restart: %v", err)
	}
}
