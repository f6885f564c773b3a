package registry

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// coreSetRV gives objects the version every update carries.
func coreSetRV(objs ...runtime.Object) {
	for _, o := range objs {
		o.(metav1.Object).SetResourceVersion("1")
	}
}

func coreValidPod() *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27",
				Ports:        []corev1.ContainerPort{{Name: "http", ContainerPort: 80}},
				VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}}},
			Volumes: []corev1.Volume{{Name: "data"}},
		},
	}
	coreCreate("pods", pod)
	coreSetRV(pod)
	return pod
}

// coreErrorKeys renders errors as "type field" for comparison; the detail is
// checked separately where its wording matters to kubectl users.
func coreErrorKeys(errs field.ErrorList) []string {
	keys := make([]string, len(errs))
	for i, e := range errs {
		keys[i] = fmt.Sprintf("%s %s", string(e.Type), e.Field)
	}
	return keys
}

func TestCoreValidatePod(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*corev1.Pod)
		want   []string
	}{
		{"valid", func(*corev1.Pod) {}, nil},
		{"no containers", func(p *corev1.Pod) { p.Spec.Containers = nil },
			[]string{"FieldValueRequired spec.containers"}},
		{"bad pod name", func(p *corev1.Pod) { p.Name = "Web" },
			[]string{"FieldValueInvalid metadata.name"}},
		{"container name missing", func(p *corev1.Pod) { p.Spec.Containers[0].Name = "" },
			[]string{"FieldValueRequired spec.containers[0].name"}},
		{"container name not a label", func(p *corev1.Pod) { p.Spec.Containers[0].Name = "App_1" },
			[]string{"FieldValueInvalid spec.containers[0].name"}},
		{"duplicate container names", func(p *corev1.Pod) {
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "app", Image: "busybox",
				TerminationMessagePolicy: "File", ImagePullPolicy: "Always"})
		}, []string{"FieldValueDuplicate spec.containers[1].name"}},
		{"image missing", func(p *corev1.Pod) { p.Spec.Containers[0].Image = "" },
			[]string{"FieldValueRequired spec.containers[0].image"}},
		{"image with spaces", func(p *corev1.Pod) { p.Spec.Containers[0].Image = " nginx" },
			[]string{"FieldValueInvalid spec.containers[0].image"}},
		{"port out of range", func(p *corev1.Pod) { p.Spec.Containers[0].Ports[0].ContainerPort = 70000 },
			[]string{"FieldValueInvalid spec.containers[0].ports[0].containerPort"}},
		{"duplicate port names", func(p *corev1.Pod) {
			p.Spec.Containers[0].Ports = append(p.Spec.Containers[0].Ports, corev1.ContainerPort{Name: "http", ContainerPort: 81, Protocol: "TCP"})
		}, []string{"FieldValueDuplicate spec.containers[0].ports[1].name"}},
		{"bad protocol", func(p *corev1.Pod) { p.Spec.Containers[0].Ports[0].Protocol = "ICMP" },
			[]string{"FieldValueNotSupported spec.containers[0].ports[0].protocol"}},
		{"host port clash", func(p *corev1.Pod) {
			p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 80, HostPort: 8080, Protocol: "TCP"}, {ContainerPort: 81, HostPort: 8080, Protocol: "TCP"}}
		}, []string{"FieldValueDuplicate spec.containers[0].ports[1].hostPort"}},
		{"bad restartPolicy", func(p *corev1.Pod) { p.Spec.RestartPolicy = "Sometimes" },
			[]string{"FieldValueNotSupported spec.restartPolicy"}},
		{"bad dnsPolicy", func(p *corev1.Pod) { p.Spec.DNSPolicy = "Cluster" },
			[]string{"FieldValueNotSupported spec.dnsPolicy"}},
		{"negative cpu", func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("-1")}
		}, []string{"FieldValueInvalid spec.containers[0].resources.requests[cpu]"}},
		{"request above limit", func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources = corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("2Gi")},
				Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}}
		}, []string{"FieldValueInvalid spec.containers[0].resources.requests"}},
		{"unknown resource", func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{"gpu": resource.MustParse("1")}
		}, []string{"FieldValueInvalid spec.containers[0].resources.limits[gpu]", "FieldValueInvalid spec.containers[0].resources.limits[gpu]"}},
		{"duplicate volumes", func(p *corev1.Pod) { p.Spec.Volumes = append(p.Spec.Volumes, p.Spec.Volumes[0]) },
			[]string{"FieldValueDuplicate spec.volumes[1].name"}},
		{"two volume types", func(p *corev1.Pod) {
			p.Spec.Volumes[0].HostPath = &corev1.HostPathVolumeSource{Path: "/x"}
			// As upstream, a volume that fails validation is not mountable either.
		}, []string{"FieldValueForbidden spec.volumes[0].emptyDir", "FieldValueNotFound spec.containers[0].volumeMounts[0].name"}},
		{"mount of unknown volume", func(p *corev1.Pod) { p.Spec.Containers[0].VolumeMounts[0].Name = "nope" },
			[]string{"FieldValueNotFound spec.containers[0].volumeMounts[0].name"}},
		{"env name with =", func(p *corev1.Pod) { p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "A=B"}} },
			[]string{"FieldValueInvalid spec.containers[0].env[0].name"}},
		{"env valueFrom empty", func(p *corev1.Pod) {
			p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "A", ValueFrom: &corev1.EnvVarSource{}}}
		}, []string{"FieldValueInvalid spec.containers[0].env[0].valueFrom"}},
		{"probe without handler", func(p *corev1.Pod) {
			p.Spec.Containers[0].ReadinessProbe = &corev1.Probe{TimeoutSeconds: 1, PeriodSeconds: 10, SuccessThreshold: 1, FailureThreshold: 3}
		}, []string{"FieldValueRequired spec.containers[0].readinessProbe"}},
		{"init container probe", func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "busybox", TerminationMessagePolicy: "File", ImagePullPolicy: "Always",
				LivenessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}}}}
		}, []string{"FieldValueForbidden spec.initContainers[0].livenessProbe"}},
		{"toleration without key", func(p *corev1.Pod) {
			p.Spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpEqual, Value: "x"}}
		}, []string{"FieldValueInvalid spec.tolerations[0].operator"}},
		{"bad node selector", func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"bad key": "x"} },
			[]string{"FieldValueInvalid spec.nodeSelector"}},
		{"ephemeral containers on create", func(p *corev1.Pod) {
			p.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
				Name: "debug", Image: "busybox", TerminationMessagePolicy: "File", ImagePullPolicy: "Always"}}}
		}, []string{"FieldValueForbidden spec.ephemeralContainers"}},
		{"gated pod with node", func(p *corev1.Pod) {
			p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "example.com/wait"}}
			p.Spec.NodeName = "node-1"
		}, []string{"FieldValueForbidden spec.nodeName"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := coreValidPod()
			tc.mutate(pod)
			got := coreErrorKeys(coreResource(t, "pods").Validate(pod))
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("errors:\n  got  %q\n  want %q", got, tc.want)
			}
		})
	}
}

// TestCoreErrorMessages pins full messages that kubectl prints verbatim.
func TestCoreErrorMessages(t *testing.T) {
	for _, tc := range []struct {
		name     string
		resource string
		obj      runtime.Object
		want     string
	}{
		{"container name required", "pods", func() runtime.Object {
			p := coreValidPod()
			p.Spec.Containers[0].Name = ""
			return p
		}(), "spec.containers[0].name: Required value"},
		{"pod name", "pods", func() runtime.Object {
			p := coreValidPod()
			p.Name = "Foo"
			return p
		}(), `metadata.name: Invalid value: "Foo": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`},
		{"namespace name", "namespaces", &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "Foo"}},
			`metadata.name: Invalid value: "Foo": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`},
		{"service name", "services", func() runtime.Object {
			s := coreValidService()
			s.Name = "1web"
			return s
		}(), `metadata.name: Invalid value: "1web": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')`},
		{"restart policy", "pods", func() runtime.Object {
			p := coreValidPod()
			p.Spec.RestartPolicy = "Sometimes"
			return p
		}(), `spec.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"`},
		{"configmap key", "configmaps", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "default"},
			Data: map[string]string{"a b": "x"}},
			`data[a b]: Invalid value: "a b": a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := coreResource(t, tc.resource).Validate(tc.obj)
			if len(errs) != 1 {
				t.Fatalf("want exactly one error, got %v", errs)
			}
			if errs[0].Error() != tc.want {
				t.Errorf("got  %s\nwant %s", errs[0].Error(), tc.want)
			}
		})
	}
}

func TestCoreValidatePodUpdate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*corev1.Pod)
		want   []string
	}{
		{"image change", func(p *corev1.Pod) { p.Spec.Containers[0].Image = "nginx:1.28" }, nil},
		{"added toleration", func(p *corev1.Pod) {
			p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{Key: "k", Operator: corev1.TolerationOpExists})
		}, nil},
		{"active deadline set", func(p *corev1.Pod) { v := int64(60); p.Spec.ActiveDeadlineSeconds = &v }, nil},
		{"port change", func(p *corev1.Pod) { p.Spec.Containers[0].Ports[0].ContainerPort = 81 },
			[]string{"FieldValueForbidden spec"}},
		{"container added", func(p *corev1.Pod) {
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "b", Image: "busybox", TerminationMessagePolicy: "File", ImagePullPolicy: "Always"})
		}, []string{"FieldValueForbidden spec.containers"}},
		{"label change", func(p *corev1.Pod) { p.Labels = map[string]string{"a": "b"} }, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old := coreValidPod()
			pod := old.DeepCopy()
			tc.mutate(pod)
			errs := coreResource(t, "pods").ValidateUpdate(pod, old)
			got := coreErrorKeys(errs)
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Fatalf("errors:\n  got  %q\n  want %q", got, tc.want)
			}
			for _, e := range errs {
				if e.Field == "spec" {
					prefix := "spec: Forbidden: pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)\n"
					if !strings.HasPrefix(e.Error(), prefix) || !strings.Contains(e.Error(), "ContainerPort") {
						t.Errorf("message does not have upstream's shape:\n%s", e.Error())
					}
				}
			}
		})
	}
}

func coreValidService() *corev1.Service {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"},
			Ports: []corev1.ServicePort{{Port: 80}}},
	}
	coreCreate("services", svc)
	coreSetRV(svc)
	return svc
}

func TestCoreValidateService(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*corev1.Service)
		want   []string
	}{
		{"valid", func(*corev1.Service) {}, nil},
		{"no ports", func(s *corev1.Service) { s.Spec.Ports = nil }, []string{"FieldValueRequired spec.ports"}},
		{"headless without ports", func(s *corev1.Service) {
			s.Spec.Ports = nil
			s.Spec.ClusterIP, s.Spec.ClusterIPs = "None", []string{"None"}
		}, nil},
		{"port zero", func(s *corev1.Service) { s.Spec.Ports[0].Port = 0 }, []string{"FieldValueInvalid spec.ports[0].port"}},
		{"target port too big", func(s *corev1.Service) { s.Spec.Ports[0].TargetPort.IntVal = 70000 },
			[]string{"FieldValueInvalid spec.ports[0].targetPort"}},
		{"bad protocol", func(s *corev1.Service) { s.Spec.Ports[0].Protocol = "HTTP" },
			[]string{"FieldValueNotSupported spec.ports[0].protocol"}},
		{"unnamed second port", func(s *corev1.Service) {
			s.Spec.Ports[0].Name = "http"
			s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Port: 443, TargetPort: s.Spec.Ports[0].TargetPort, Protocol: "TCP"})
		}, []string{"FieldValueRequired spec.ports[1].name"}},
		{"bad type", func(s *corev1.Service) { s.Spec.Type = "Public" }, []string{"FieldValueNotSupported spec.type"}},
		{"bad selector", func(s *corev1.Service) { s.Spec.Selector = map[string]string{"app": "a b"} },
			[]string{"FieldValueInvalid spec.selector"}},
		{"node port on ClusterIP", func(s *corev1.Service) { s.Spec.Ports[0].NodePort = 30080 },
			[]string{"FieldValueForbidden spec.ports[0].nodePort"}},
		{"external name missing", func(s *corev1.Service) {
			s.Spec.Type = corev1.ServiceTypeExternalName
			s.Spec.InternalTrafficPolicy = nil
		}, []string{"FieldValueRequired spec.externalName"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc := coreValidService()
			tc.mutate(svc)
			got := coreErrorKeys(coreResource(t, "services").Validate(svc))
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("errors:\n  got  %q\n  want %q", got, tc.want)
			}
		})
	}
}

func TestCoreServiceUpdate(t *testing.T) {
	r := coreResource(t, "services")
	old := coreValidService()
	old.Spec.ClusterIP, old.Spec.ClusterIPs = "10.96.0.10", []string{"10.96.0.10"}

	t.Run("cluster IP is immutable", func(t *testing.T) {
		svc := old.DeepCopy()
		svc.Spec.ClusterIP, svc.Spec.ClusterIPs = "10.96.0.11", []string{"10.96.0.11"}
		got := coreErrorKeys(r.ValidateUpdate(svc, old))
		if strings.Join(got, ",") != "FieldValueInvalid spec.clusterIPs[0]" {
			t.Errorf("got %q", got)
		}
	})
	t.Run("NodePort to ClusterIP drops its node fields", func(t *testing.T) {
		oldNP := old.DeepCopy()
		oldNP.Spec.Type = corev1.ServiceTypeNodePort
		r.Default(oldNP)
		oldNP.Spec.Ports[0].NodePort = 30080
		svc := oldNP.DeepCopy()
		svc.Spec.Type = corev1.ServiceTypeClusterIP
		r.Default(svc)
		r.PrepareForUpdate(svc, oldNP)
		if errs := r.ValidateUpdate(svc, oldNP); len(errs) != 0 {
			t.Errorf("errors: %v", errs)
		}
	})
	t.Run("omitted cluster IP is kept", func(t *testing.T) {
		svc := old.DeepCopy()
		svc.Spec.ClusterIP, svc.Spec.ClusterIPs = "", nil
		r.Default(svc)
		r.PrepareForUpdate(svc, old)
		if errs := r.ValidateUpdate(svc, old); len(errs) != 0 || svc.Spec.ClusterIP != "10.96.0.10" {
			t.Errorf("clusterIP %q, errors %v", svc.Spec.ClusterIP, errs)
		}
	})
}

func TestCoreValidateConfigAndOthers(t *testing.T) {
	yes := true
	for _, tc := range []struct {
		name     string
		resource string
		obj, old runtime.Object
		want     []string
	}{
		{"configmap too big", "configmaps", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns"},
			Data: map[string]string{"a": strings.Repeat("x", corev1.MaxSecretSize+1)}}, nil, []string{"FieldValueTooLong []"}},
		{"immutable configmap data", "configmaps",
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns"}, Immutable: &yes, Data: map[string]string{"a": "2"}},
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns"}, Immutable: &yes, Data: map[string]string{"a": "1"}},
			[]string{"FieldValueForbidden data"}},
		{"secret key", "secrets", &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "ns"},
			Type: corev1.SecretTypeOpaque, Data: map[string][]byte{"../x": nil}}, nil, []string{"FieldValueInvalid data[../x]", "FieldValueInvalid data[../x]"}},
		{"tls secret keys", "secrets", &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "ns"},
			Type: corev1.SecretTypeTLS}, nil, []string{"FieldValueRequired data[tls.crt]", "FieldValueRequired data[tls.key]"}},
		{"secret type immutable", "secrets",
			&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "ns"}, Type: "example.com/other"},
			&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "ns"}, Type: corev1.SecretTypeOpaque},
			[]string{"FieldValueInvalid type"}},
		{"service account name", "serviceaccounts", &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "Bad_Name", Namespace: "ns"}},
			nil, []string{"FieldValueInvalid metadata.name"}},
		{"namespace finalizer", "namespaces", &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns"},
			Spec: corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{"custom"}}}, nil, []string{"FieldValueInvalid spec.finalizers[0]"}},
		{"node taint effect", "nodes", &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"},
			Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: "k", Effect: "Never"}}}}, nil, []string{"FieldValueNotSupported metadata.taints[0].effect"}},
		{"node podCIDR change", "nodes",
			&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Spec: corev1.NodeSpec{PodCIDRs: []string{"10.0.2.0/24"}}},
			&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Spec: corev1.NodeSpec{PodCIDRs: []string{"10.0.1.0/24"}}},
			[]string{"FieldValueForbidden spec.podCIDRs"}},
		{"endpoints loopback", "endpoints", &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: "e", Namespace: "ns"},
			Subsets: []corev1.EndpointSubset{{Addresses: []corev1.EndpointAddress{{IP: "127.0.0.1"}}, Ports: []corev1.EndpointPort{{Port: 80, Protocol: "TCP"}}}}},
			nil, []string{"FieldValueInvalid subsets[0].addresses[0].ip"}},
		{"event namespace mismatch", "events", &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e.1", Namespace: "ns"},
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "other", Name: "p"}}, nil, []string{"FieldValueInvalid involvedObject.namespace"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := coreResource(t, tc.resource)
			var errs field.ErrorList
			if tc.old != nil {
				coreSetRV(tc.obj, tc.old)
				errs = r.ValidateUpdate(tc.obj, tc.old)
			} else {
				errs = r.Validate(tc.obj)
			}
			got := coreErrorKeys(errs)
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("errors:\n  got  %q\n  want %q", got, tc.want)
			}
		})
	}
}

func TestCoreStatusUpdates(t *testing.T) {
	t.Run("terminated container may not run again", func(t *testing.T) {
		old := coreValidPod()
		old.Spec.RestartPolicy = corev1.RestartPolicyNever
		old.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0}}}}
		pod := old.DeepCopy()
		pod.Status.ContainerStatuses[0].State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
		got := coreErrorKeys(coreResource(t, "pods").ValidateStatusUpdate(pod, old))
		if strings.Join(got, ",") != "FieldValueForbidden status.containerStatuses[0].state" {
			t.Errorf("got %q", got)
		}
	})
	t.Run("namespace phase", func(t *testing.T) {
		old := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns", ResourceVersion: "1"}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive}}
		ns := old.DeepCopy()
		ns.Status.Phase = corev1.NamespaceTerminating
		got := coreErrorKeys(coreResource(t, "namespaces").ValidateStatusUpdate(ns, old))
		if strings.Join(got, ",") != "FieldValueInvalid status.Phase" {
			t.Errorf("got %q", got)
		}
	})
}

func TestCoreFieldSelectors(t *testing.T) {
	pod := coreValidPod()
	pod.Spec.NodeName = "node-1"
	pod.Status.PodIPs = []corev1.PodIP{{IP: "10.244.0.5"}}
	f := coreResource(t, "pods").Fields(pod)
	want := map[string]string{"spec.nodeName": "node-1", "spec.restartPolicy": "Always", "spec.schedulerName": "default-scheduler",
		"spec.serviceAccountName": "", "spec.hostNetwork": "false", "status.phase": "Pending", "status.podIP": "10.244.0.5",
		"status.nominatedNodeName": ""}
	if len(f) != len(want) {
		t.Errorf("got %v", f)
	}
	for k, v := range want {
		if got, ok := f[k]; !ok || got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
	ev := &corev1.Event{ReportingController: "kubelet", InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "p"}}
	if got := coreResource(t, "events").Fields(ev)["source"]; got != "kubelet" {
		t.Errorf("event source = %q, want reportingController as fallback", got)
	}
}
