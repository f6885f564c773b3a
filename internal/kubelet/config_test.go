package kubelet

import (
	"crypto/tls"
	"crypto/x509"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes/fake"
)

func TestConfigDefaults(t *testing.T) {
	cert := tls.Certificate{Certificate: [][]byte{{1}}}
	base := func() Config {
		dir := t.TempDir()
		return Config{NodeName: "n1", Client: fake.NewClientset(), ServingCert: cert, ClientCAs: x509.NewCertPool(),
			RootDir: filepath.Join(dir, "kubelet"), PodLogsDir: filepath.Join(dir, "pods")}
	}
	for _, tc := range []struct {
		name    string
		edit    func(*Config)
		wantErr string
	}{
		{"defaults", func(*Config) {}, ""},
		{"no node name", func(c *Config) { c.NodeName = "" }, "a node name is required"},
		{"an upper-case node name", func(c *Config) { c.NodeName = "Node1" }, "not a lower-case DNS name"},
		{"no client", func(c *Config) { c.Client = nil }, "a client is required"},
		{"no serving certificate", func(c *Config) { c.ServingCert = tls.Certificate{} }, "serving certificate"},
		{"a TCP CRI endpoint", func(c *Config) { c.RuntimeEndpoint = "tcp://127.0.0.1:1234" }, "is not unix:///path"},
		{"a port out of range", func(c *Config) { c.KubeletPort = 70000 }, "out of range"},
		{"a lease under a second", func(c *Config) { c.LeaseDuration = time.Millisecond }, "under a second"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := base()
			tc.edit(&cfg)
			got, err := cfg.withDefaults()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.NodeIP.String() != "127.0.0.1" || got.RuntimeEndpoint != "unix:///run/rudder/cri.sock" || got.ImageEndpoint != got.RuntimeEndpoint ||
				got.MaxPods != 110 || got.CgroupRoot != "/" || got.NodeStatusUpdateFrequency != 10*time.Second ||
				got.NodeStatusReportFrequency != 5*time.Minute || got.LeaseDuration != 40*time.Second || got.RelistPeriod != time.Second ||
				got.ClusterDomain != "cluster.local" || got.Clock == nil || got.Logger == nil {
				t.Errorf("defaults %+v", got)
			}
		})
	}
}
