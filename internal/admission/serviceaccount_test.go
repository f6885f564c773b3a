package admission

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
)

var podsGVR = schema.GroupVersionResource{Version: "v1", Resource: "pods"}

func saAccount(name string, mutate ...func(*corev1.ServiceAccount)) *corev1.ServiceAccount {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
	for _, m := range mutate {
		m(sa)
	}
	return sa
}

func saTestPod(mutate ...func(*corev1.Pod)) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"},
		Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "init", Image: "busybox"}},
			Containers:     []corev1.Container{{Name: "a", Image: "nginx"}, {Name: "b", Image: "nginx"}},
		},
	}
	for _, m := range mutate {
		m(pod)
	}
	return pod
}

func mirror(p *corev1.Pod) { p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "hash"} }

// saMounts returns the names of the volumes mounted at the token path,
// container by container, init containers first.
func saMounts(pod *corev1.Pod) []string {
	var out []string
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range list {
			name := "-"
			for _, m := range c.VolumeMounts {
				if m.MountPath == "/var/run/secrets/kubernetes.io/serviceaccount" {
					name = m.Name
					if !m.ReadOnly {
						name += "(rw)"
					}
				}
			}
			out = append(out, name)
		}
	}
	return out
}

func TestServiceAccountAdmit(t *testing.T) {
	enforcing := func(sa *corev1.ServiceAccount) {
		sa.Annotations = map[string]string{"kubernetes.io/enforce-mountable-secrets": "true"}
		sa.Secrets = []corev1.ObjectReference{{Name: "allowed"}}
	}
	cases := []struct {
		name     string
		accounts []*corev1.ServiceAccount
		pod      *corev1.Pod
		op       Operation
		// err is the exact message, "" for success.
		err   string
		check func(t *testing.T, pod *corev1.Pod)
	}{
		{
			name: "no account named runs as default with the token mounted everywhere", accounts: []*corev1.ServiceAccount{saAccount("default")},
			pod: saTestPod(),
			check: func(t *testing.T, pod *corev1.Pod) {
				if pod.Spec.ServiceAccountName != "default" {
					t.Errorf("serviceAccountName = %q", pod.Spec.ServiceAccountName)
				}
				if got := saMounts(pod); !equality.Semantic.DeepEqual(got, []string{"kube-api-access-abcde", "kube-api-access-abcde", "kube-api-access-abcde"}) {
					t.Errorf("mounts %v", got)
				}
				if len(pod.Spec.Volumes) != 1 || pod.Spec.Volumes[0].Name != "kube-api-access-abcde" {
					t.Fatalf("volumes %+v", pod.Spec.Volumes)
				}
				want := &corev1.ProjectedVolumeSource{
					DefaultMode: ptr.To[int32](0o644),
					Sources: []corev1.VolumeProjection{
						{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr.To[int64](3607)}},
						{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"},
							Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
						{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "namespace",
							FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}}}},
					},
				}
				if got := pod.Spec.Volumes[0].Projected; !equality.Semantic.DeepEqual(got, want) {
					t.Errorf("projected source %+v", got)
				}
			},
		},
		{
			name: "named account that exists", accounts: []*corev1.ServiceAccount{saAccount("builder")},
			pod: saTestPod(func(p *corev1.Pod) { p.Spec.ServiceAccountName = "builder" }),
			check: func(t *testing.T, pod *corev1.Pod) {
				if pod.Spec.ServiceAccountName != "builder" || len(pod.Spec.Volumes) != 1 {
					t.Errorf("sa %q volumes %d", pod.Spec.ServiceAccountName, len(pod.Spec.Volumes))
				}
			},
		},
		{
			name: "missing account refused", accounts: []*corev1.ServiceAccount{saAccount("default")},
			pod: saTestPod(func(p *corev1.Pod) { p.Spec.ServiceAccountName = "missing" }),
			err: `pods "p" is forbidden: error looking up service account ns/missing: serviceaccount "missing" not found`,
		},
		{
			name: "missing default account refused", pod: saTestPod(),
			err: `pods "p" is forbidden: error looking up service account ns/default: serviceaccount "default" not found`,
		},
		{
			name: "pod opts out of the token", accounts: []*corev1.ServiceAccount{saAccount("default")},
			pod: saTestPod(func(p *corev1.Pod) { p.Spec.AutomountServiceAccountToken = ptr.To(false) }),
			check: func(t *testing.T, pod *corev1.Pod) {
				if len(pod.Spec.Volumes) != 0 || saMounts(pod)[1] != "-" {
					t.Errorf("volumes %v mounts %v", pod.Spec.Volumes, saMounts(pod))
				}
			},
		},
		{
			name: "account opts out of the token",
			accounts: []*corev1.ServiceAccount{saAccount("default", func(sa *corev1.ServiceAccount) {
				sa.AutomountServiceAccountToken = ptr.To(false)
			})},
			pod: saTestPod(),
			check: func(t *testing.T, pod *corev1.Pod) {
				if len(pod.Spec.Volumes) != 0 {
					t.Errorf("volumes %v", pod.Spec.Volumes)
				}
			},
		},
		{
			name: "the pod's choice beats the account's",
			accounts: []*corev1.ServiceAccount{saAccount("default", func(sa *corev1.ServiceAccount) {
				sa.AutomountServiceAccountToken = ptr.To(false)
			})},
			pod: saTestPod(func(p *corev1.Pod) { p.Spec.AutomountServiceAccountToken = ptr.To(true) }),
			check: func(t *testing.T, pod *corev1.Pod) {
				if len(pod.Spec.Volumes) != 1 {
					t.Errorf("volumes %v", pod.Spec.Volumes)
				}
			},
		},
		{
			name: "a container with its own mount at the path keeps it", accounts: []*corev1.ServiceAccount{saAccount("default")},
			pod: saTestPod(func(p *corev1.Pod) {
				p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "mine", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount"}}
			}),
			check: func(t *testing.T, pod *corev1.Pod) {
				if got := saMounts(pod); !equality.Semantic.DeepEqual(got, []string{"kube-api-access-abcde", "mine(rw)", "kube-api-access-abcde"}) {
					t.Errorf("mounts %v", got)
				}
			},
		},
		{
			name: "no volume when every container has its own mount", accounts: []*corev1.ServiceAccount{saAccount("default")},
			pod: saTestPod(func(p *corev1.Pod) {
				p.Spec.InitContainers = nil
				p.Spec.Containers = p.Spec.Containers[:1]
				p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "mine", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount"}}
			}),
			check: func(t *testing.T, pod *corev1.Pod) {
				if len(pod.Spec.Volumes) != 0 {
					t.Errorf("volumes %v", pod.Spec.Volumes)
				}
			},
		},
		{
			name: "an existing kube-api-access volume is reused", accounts: []*corev1.ServiceAccount{saAccount("default")},
			pod: saTestPod(func(p *corev1.Pod) {
				p.Spec.Volumes = []corev1.Volume{{Name: "kube-api-access-xyz12", VolumeSource: corev1.VolumeSource{Projected: saTokenVolumeSource()}}}
			}),
			check: func(t *testing.T, pod *corev1.Pod) {
				if len(pod.Spec.Volumes) != 1 || saMounts(pod)[0] != "kube-api-access-xyz12" {
					t.Errorf("volumes %v mounts %v", pod.Spec.Volumes, saMounts(pod))
				}
			},
		},
		{
			name: "pull secrets come from the account",
			accounts: []*corev1.ServiceAccount{saAccount("default", func(sa *corev1.ServiceAccount) {
				sa.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "registry"}}
			})},
			pod: saTestPod(),
			check: func(t *testing.T, pod *corev1.Pod) {
				if len(pod.Spec.ImagePullSecrets) != 1 || pod.Spec.ImagePullSecrets[0].Name != "registry" {
					t.Errorf("imagePullSecrets %v", pod.Spec.ImagePullSecrets)
				}
			},
		},
		{
			name: "the pod's own pull secrets are kept",
			accounts: []*corev1.ServiceAccount{saAccount("default", func(sa *corev1.ServiceAccount) {
				sa.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "registry"}}
			})},
			pod: saTestPod(func(p *corev1.Pod) { p.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "own"}} }),
			check: func(t *testing.T, pod *corev1.Pod) {
				if len(pod.Spec.ImagePullSecrets) != 1 || pod.Spec.ImagePullSecrets[0].Name != "own" {
					t.Errorf("imagePullSecrets %v", pod.Spec.ImagePullSecrets)
				}
			},
		},
		{
			name: "a mirror pod is left alone", pod: saTestPod(mirror),
			check: func(t *testing.T, pod *corev1.Pod) {
				if pod.Spec.ServiceAccountName != "" || len(pod.Spec.Volumes) != 0 {
					t.Errorf("mirror pod changed: %q %v", pod.Spec.ServiceAccountName, pod.Spec.Volumes)
				}
			},
		},
		{
			name: "a mirror pod may not name an account", accounts: []*corev1.ServiceAccount{saAccount("default")},
			pod: saTestPod(mirror, func(p *corev1.Pod) { p.Spec.ServiceAccountName = "default" }),
			err: `pods "p" is forbidden: a mirror pod may not reference service accounts`,
		},
		{
			name: "a mirror pod may not reference secrets",
			pod: saTestPod(mirror, func(p *corev1.Pod) {
				p.Spec.Containers[1].EnvFrom = []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}}}}
			}),
			err: `pods "p" is forbidden: a mirror pod may not reference secrets`,
		},
		{
			name: "a mirror pod may not project a token",
			pod: saTestPod(mirror, func(p *corev1.Pod) {
				p.Spec.Volumes = []corev1.Volume{{Name: "t", VolumeSource: corev1.VolumeSource{Projected: saTokenVolumeSource()}}}
			}),
			err: `pods "p" is forbidden: a mirror pod may not use ServiceAccountToken volume projections`,
		},
		{
			name: "enforcing account refuses an unlisted secret volume", accounts: []*corev1.ServiceAccount{saAccount("default", enforcing)},
			pod: saTestPod(func(p *corev1.Pod) {
				p.Spec.Volumes = []corev1.Volume{{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "other"}}}}
			}),
			err: `pods "p" is forbidden: volume with secret.secretName="other" is not allowed because service account default does not reference that secret`,
		},
		{
			name: "enforcing account refuses an unlisted env secret", accounts: []*corev1.ServiceAccount{saAccount("default", enforcing)},
			pod: saTestPod(func(p *corev1.Pod) {
				p.Spec.Containers[1].Env = []corev1.EnvVar{{Name: "PW", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
					LocalObjectReference: corev1.LocalObjectReference{Name: "other"}, Key: "pw"}}}}
			}),
			err: `pods "p" is forbidden: container b with envVar PW referencing secret.secretName="other" is not allowed because service account default does not reference that secret`,
		},
		{
			name: "enforcing account allows a listed secret", accounts: []*corev1.ServiceAccount{saAccount("default", enforcing)},
			pod: saTestPod(func(p *corev1.Pod) {
				p.Spec.Volumes = []corev1.Volume{{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "allowed"}}}}
			}),
		},
		{
			name: "updates are not touched", op: Update, pod: saTestPod(),
			check: func(t *testing.T, pod *corev1.Pod) {
				if pod.Spec.ServiceAccountName != "" {
					t.Errorf("update mutated")
				}
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			objs := &objectSet{}
			for _, sa := range tc.accounts {
				objs.items = append(objs.items, sa)
			}
			plugin := ServiceAccount{Objects: objs, Attempts: 2, RetryInterval: time.Millisecond, Suffix: func() string { return "abcde" }}
			op := tc.op
			if op == "" {
				op = Create
			}
			attrs := &Attributes{Operation: op, Resource: podsGVR, Namespace: "ns", Name: "p", Object: tc.pod, OldObject: saTestPod()}
			err := plugin.Admit(context.Background(), attrs)
			if err == nil {
				err = plugin.Validate(context.Background(), attrs)
			}
			switch {
			case tc.err == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tc.err != "" && (err == nil || err.Error() != tc.err || !apierrors.IsForbidden(err)):
				t.Fatalf("got %v, want 403 %q", err, tc.err)
			}
			if tc.check != nil {
				tc.check(t, tc.pod)
			}
		})
	}
}

func TestServiceAccountWaitsForTheDefaultAccountOnly(t *testing.T) {
	cases := []struct {
		name      string
		account   string
		wantReads int
	}{
		{"default is looked up Attempts times", "default", 4},
		{"others are looked up once", "builder", 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			objs := &objectSet{}
			plugin := ServiceAccount{Objects: objs, Attempts: 4, RetryInterval: time.Millisecond}
			pod := saTestPod(func(p *corev1.Pod) { p.Spec.ServiceAccountName = tc.account })
			err := plugin.Admit(context.Background(), &Attributes{Operation: Create, Resource: podsGVR, Namespace: "ns", Name: "p", Object: pod})
			if !apierrors.IsForbidden(err) || objs.gets != tc.wantReads {
				t.Fatalf("err %v after %d reads, want 403 after %d", err, objs.gets, tc.wantReads)
			}
		})
	}
	t.Run("a cancelled request stops waiting", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		plugin := ServiceAccount{Objects: &objectSet{}, Attempts: 10, RetryInterval: time.Hour}
		err := plugin.Admit(ctx, &Attributes{Operation: Create, Resource: podsGVR, Namespace: "ns", Name: "p", Object: saTestPod()})
		if err == nil {
			t.Fatal("want an error")
		}
	})
}
