package registry_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"

	"github.com/rudder-dev/rudder/internal/clustertest"
)

var apiServicesGVR = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}

// TestAPIServicesEndToEnd: the conformance suite's AggregatedDiscovery
// tests expect apiregistration.k8s.io/v1 apiservices in discovery, and
// every built-in group version has a local APIService, Available, as
// upstream's aggregator registers them at start.
func TestAPIServicesEndToEnd(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dyn, err := dynamic.NewForConfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	r := dyn.Resource(apiServicesGVR)

	t.Run("aggregated discovery lists apiservices", func(t *testing.T) {
		raw, err := c.Client.Discovery().RESTClient().Get().AbsPath("/apis").
			SetHeader("Accept", "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList").Do(ctx).Raw()
		if err != nil {
			t.Fatal(err)
		}
		var list apidiscoveryv2.APIGroupDiscoveryList
		if err := json.Unmarshal(raw, &list); err != nil {
			t.Fatal(err)
		}
		found := false
		for _, g := range list.Items {
			for _, v := range g.Versions {
				for _, res := range v.Resources {
					if g.Name == "apiregistration.k8s.io" && v.Version == "v1" && res.Resource == "apiservices" {
						found = res.Scope == apidiscoveryv2.ScopeCluster
					}
				}
			}
		}
		if !found {
			t.Error("apiregistration.k8s.io/v1 apiservices (cluster-scoped) is not in the aggregated discovery of /apis")
		}
	})

	t.Run("local APIServices exist and are available", func(t *testing.T) {
		for _, name := range []string{"v1.", "v1.apps", "v1.apiregistration.k8s.io", "v1.rbac.authorization.k8s.io"} {
			u, err := r.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Errorf("get %s: %v", name, err)
				continue
			}
			as := toAPIService(t, u)
			if as.Spec.Service != nil || as.Spec.GroupPriorityMinimum <= 0 || as.Spec.VersionPriority <= 0 {
				t.Errorf("%s: spec %+v, want a local APIService with priorities", name, as.Spec)
			}
			if !apiServiceAvailable(as, apiregistrationv1.ConditionTrue, "Local") {
				t.Errorf("%s: conditions %+v, want Available=True reason Local", name, as.Status.Conditions)
			}
		}
	})

	t.Run("validation", func(t *testing.T) {
		tests := []struct {
			name string
			as   apiregistrationv1.APIService
			want string // substring of the 422's message; "" = accepted
		}{
			{"name must be version.group", apiService("v1.wrong.example.com", "example.com", "v1", nil), "must be `spec.version+\".\"+spec.group`"},
			{"priorities must be positive", func() apiregistrationv1.APIService {
				as := apiService("v1.example.com", "example.com", "v1", nil)
				as.Spec.GroupPriorityMinimum = 0
				return as
			}(), "spec.groupPriorityMinimum"},
			{"service needs a namespace", apiService("v1.example.com", "example.com", "v1", &apiregistrationv1.ServiceReference{Name: "api"}), "spec.service.namespace: Required"},
			{"service-backed is stored, not available", apiService("v1alpha1.wardle.example.com", "wardle.example.com", "v1alpha1",
				&apiregistrationv1.ServiceReference{Namespace: "default", Name: "api"}), ""},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&tc.as)
				if err != nil {
					t.Fatal(err)
				}
				got, err := r.Create(ctx, &unstructured.Unstructured{Object: obj}, metav1.CreateOptions{})
				if tc.want != "" {
					if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.want) {
						t.Fatalf("create: %v, want 422 containing %q", err, tc.want)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				as := toAPIService(t, got)
				if as.Spec.Service.Port == nil || *as.Spec.Service.Port != 443 {
					t.Errorf("service port %v, want defaulted to 443", as.Spec.Service.Port)
				}
				if !apiServiceAvailable(as, apiregistrationv1.ConditionFalse, "ProxyNotImplemented") {
					t.Errorf("conditions %+v, want Available=False ProxyNotImplemented", as.Status.Conditions)
				}
			})
		}
	})

	t.Run("kubectl get apiservices", func(t *testing.T) {
		bin := os.Getenv("KUBECTL")
		if bin == "" {
			var err error
			if bin, err = exec.LookPath("kubectl"); err != nil {
				t.Skip("kubectl not found: set $KUBECTL or put kubectl on PATH")
			}
		}
		cmd := exec.CommandContext(ctx, bin, "get", "apiservices", "v1.apps", "v1alpha1.wardle.example.com")
		cmd.Env = []string{"KUBECONFIG=" + c.Server.Kubeconfig, "HOME=" + t.TempDir(), "PATH=" + os.Getenv("PATH")}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl: %v\n%s", err, out)
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		if len(lines) != 3 || strings.Join(strings.Fields(lines[0]), " ") != "NAME SERVICE AVAILABLE AGE" ||
			!strings.HasPrefix(strings.Join(strings.Fields(lines[1]), " "), "v1.apps Local True") ||
			!strings.HasPrefix(strings.Join(strings.Fields(lines[2]), " "), "v1alpha1.wardle.example.com default/api False (ProxyNotImplemented)") {
			t.Errorf("kubectl get apiservices printed:\n%s", out)
		}
	})
}

func apiService(name, group, version string, svc *apiregistrationv1.ServiceReference) apiregistrationv1.APIService {
	return apiregistrationv1.APIService{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apiregistration.k8s.io/v1", Kind: "APIService"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: apiregistrationv1.APIServiceSpec{Group: group, Version: version, Service: svc,
			GroupPriorityMinimum: 2000, VersionPriority: 200, InsecureSkipTLSVerify: svc != nil},
	}
}

func toAPIService(t *testing.T, u *unstructured.Unstructured) *apiregistrationv1.APIService {
	t.Helper()
	var as apiregistrationv1.APIService
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &as); err != nil {
		t.Fatal(err)
	}
	return &as
}

func apiServiceAvailable(as *apiregistrationv1.APIService, status apiregistrationv1.ConditionStatus, reason string) bool {
	for _, c := range as.Status.Conditions {
		if c.Type == apiregistrationv1.Available {
			return c.Status == status && c.Reason == reason
		}
	}
	return false
}
