package kubelet

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	cri "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"
)

// Pod volumes, kept under <RootDir>/pods/<uid>/volumes/<plugin>/<name> as
// upstream lays them out: emptyDir directories (tmpfs mounts for medium
// Memory, mounts.go), and configMap, secret,
// downwardAPI and projected volumes (service account tokens by the
// TokenRequest API) written as files. hostPath volumes are the host's
// directories. Other kinds (persistent volumes) are not supported yet: a
// pod using one waits in ContainerCreating with the reason.
//
// Files are written as upstream's atomic writer does, so a container
// never sees half an update: the payload goes to a fresh ..<time>
// directory, the ..data symlink is swapped to it by rename, and each
// user-visible name is a symlink through ..data.

// Plugin directory names, upstream's.
const (
	pluginEmptyDir  = "kubernetes.io~empty-dir"
	pluginConfigMap = "kubernetes.io~configmap"
	pluginSecret    = "kubernetes.io~secret"
	pluginDownward  = "kubernetes.io~downward-api"
	pluginProjected = "kubernetes.io~projected"
)

// volumeError is a volume the kubelet cannot set up (the pod waits in
// ContainerCreating).
type volumeError struct {
	volume string
	err    error
}

func (e *volumeError) Error() string {
	return fmt.Sprintf("MountVolume.SetUp failed for volume %q : %v", e.volume, e.err)
}
func (e *volumeError) Unwrap() error { return e.err }

// podVolume is one set-up volume: where it is on the host.
type podVolume struct {
	hostPath string
	readOnly bool // configMap, secret, downwardAPI, projected
}

// podDir is the kubelet's directory for pod uid.
func (k *Kubelet) podDir(uid string) string { return filepath.Join(k.cfg.RootDir, "pods", uid) }

// setupVolumes makes every volume of pod ready and returns them by name.
// It is idempotent and refreshes configMaps, secrets and tokens.
func (k *Kubelet) setupVolumes(ctx context.Context, pod *corev1.Pod, podIPs []string) (map[string]podVolume, error) {
	out := map[string]podVolume{}
	base := filepath.Join(k.podDir(string(pod.UID)), "volumes")
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		var pv podVolume
		var err error
		switch {
		case v.EmptyDir != nil:
			pv.hostPath = filepath.Join(base, pluginEmptyDir, v.Name)
			err = os.MkdirAll(pv.hostPath, 0o777)
			if err == nil {
				err = os.Chmod(pv.hostPath, 0o777) // beat the umask: any user may write
			}
			switch v.EmptyDir.Medium {
			case corev1.StorageMediumDefault:
			case corev1.StorageMediumMemory:
				if err == nil {
					err = mountTmpfs(pv.hostPath, k.memoryEmptyDirSize(v.EmptyDir))
				}
			default:
				err = fmt.Errorf("emptyDir medium %q is not supported", v.EmptyDir.Medium)
			}
		case v.HostPath != nil:
			pv.hostPath, err = hostPathVolume(v.HostPath)
		case v.ConfigMap != nil:
			pv = podVolume{hostPath: filepath.Join(base, pluginConfigMap, v.Name), readOnly: true}
			err = k.writeConfigMapVolume(ctx, pod, v.ConfigMap, pv.hostPath)
		case v.Secret != nil:
			pv = podVolume{hostPath: filepath.Join(base, pluginSecret, v.Name), readOnly: true}
			err = k.writeSecretVolume(ctx, pod, v.Secret, pv.hostPath)
		case v.DownwardAPI != nil:
			pv = podVolume{hostPath: filepath.Join(base, pluginDownward, v.Name), readOnly: true}
			var files []volumeFile
			if files, err = k.downwardFiles(pod, v.DownwardAPI.Items, v.DownwardAPI.DefaultMode, podIPs); err == nil {
				err = writeAtomic(pv.hostPath, files)
			}
		case v.Projected != nil:
			pv = podVolume{hostPath: filepath.Join(base, pluginProjected, v.Name), readOnly: true}
			err = k.writeProjectedVolume(ctx, pod, v.Name, v.Projected, pv.hostPath, podIPs)
		default:
			err = errors.New("this kind of volume is not supported by rudder's kubelet yet")
		}
		if err != nil {
			return nil, &volumeError{volume: v.Name, err: err}
		}
		out[v.Name] = pv
	}
	return out, nil
}

func hostPathVolume(hp *corev1.HostPathVolumeSource) (string, error) {
	p := filepath.Clean(hp.Path)
	t := corev1.HostPathUnset
	if hp.Type != nil {
		t = *hp.Type
	}
	fi, err := os.Stat(p)
	switch t {
	case corev1.HostPathDirectoryOrCreate:
		if errors.Is(err, fs.ErrNotExist) {
			return p, os.MkdirAll(p, 0o755)
		}
	case corev1.HostPathFileOrCreate:
		if errors.Is(err, fs.ErrNotExist) {
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return "", err
			}
			f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY, 0o644)
			if err != nil {
				return "", err
			}
			return p, f.Close()
		}
	case corev1.HostPathDirectory:
		if err != nil || !fi.IsDir() {
			return "", fmt.Errorf("hostPath type check failed: %s is not a directory", p)
		}
	case corev1.HostPathFile:
		if err != nil || !fi.Mode().IsRegular() {
			return "", fmt.Errorf("hostPath type check failed: %s is not a file", p)
		}
	case corev1.HostPathSocket:
		if err != nil || fi.Mode()&fs.ModeSocket == 0 {
			return "", fmt.Errorf("hostPath type check failed: %s is not a socket file", p)
		}
	}
	return p, nil
}

// volumeFile is one file of a volume's payload.
type volumeFile struct {
	path string // relative
	data []byte
	mode os.FileMode
}

func modeOr(m *int32, def int32) os.FileMode {
	if m != nil {
		return os.FileMode(*m) & 0o777
	}
	return os.FileMode(def) & 0o777
}

// keyFiles is the files of a configMap or secret: every key, or the
// listed items (a missing key fails unless optional).
func keyFiles(kind, name string, data map[string][]byte, items []corev1.KeyToPath, mode *int32, optional bool) ([]volumeFile, error) {
	def := modeOr(mode, corev1.ConfigMapVolumeSourceDefaultMode)
	var out []volumeFile
	if len(items) == 0 {
		for k, v := range data {
			out = append(out, volumeFile{path: k, data: v, mode: def})
		}
		return out, nil
	}
	for _, it := range items {
		v, ok := data[it.Key]
		if !ok {
			if optional {
				continue
			}
			return nil, fmt.Errorf("configure volume: key %q not found in %s %q", it.Key, kind, name)
		}
		m := def
		if it.Mode != nil {
			m = modeOr(it.Mode, 0)
		}
		out = append(out, volumeFile{path: it.Path, data: v, mode: m})
	}
	return out, nil
}

func (k *Kubelet) configMapFiles(ctx context.Context, pod *corev1.Pod, name string, items []corev1.KeyToPath, mode *int32, optional bool) ([]volumeFile, error) {
	cm, err := k.client().CoreV1().ConfigMaps(pod.Namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		if apierrors.IsNotFound(err) && optional {
			return nil, nil
		}
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("configmap %q not found", name)
		}
		return nil, err
	}
	data := map[string][]byte{}
	for k, v := range cm.Data {
		data[k] = []byte(v)
	}
	for k, v := range cm.BinaryData {
		data[k] = v
	}
	return keyFiles("ConfigMap", name, data, items, mode, optional)
}

func (k *Kubelet) secretFiles(ctx context.Context, pod *corev1.Pod, name string, items []corev1.KeyToPath, mode *int32, optional bool) ([]volumeFile, error) {
	s, err := k.client().CoreV1().Secrets(pod.Namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		if apierrors.IsNotFound(err) && optional {
			return nil, nil
		}
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("secret %q not found", name)
		}
		return nil, err
	}
	return keyFiles("Secret", name, s.Data, items, mode, optional)
}

func (k *Kubelet) writeConfigMapVolume(ctx context.Context, pod *corev1.Pod, src *corev1.ConfigMapVolumeSource, dir string) error {
	files, err := k.configMapFiles(ctx, pod, src.Name, src.Items, src.DefaultMode, src.Optional != nil && *src.Optional)
	if err != nil {
		return err
	}
	return writeAtomic(dir, files)
}

func (k *Kubelet) writeSecretVolume(ctx context.Context, pod *corev1.Pod, src *corev1.SecretVolumeSource, dir string) error {
	files, err := k.secretFiles(ctx, pod, src.SecretName, src.Items, src.DefaultMode, src.Optional != nil && *src.Optional)
	if err != nil {
		return err
	}
	return writeAtomic(dir, files)
}

// downwardFiles renders downward API items.
func (k *Kubelet) downwardFiles(pod *corev1.Pod, items []corev1.DownwardAPIVolumeFile, mode *int32, podIPs []string) ([]volumeFile, error) {
	def := modeOr(mode, corev1.DownwardAPIVolumeSourceDefaultMode)
	var out []volumeFile
	for _, it := range items {
		var v string
		var err error
		switch {
		case it.FieldRef != nil:
			v, err = podFieldValue(pod, it.FieldRef.FieldPath, podIPs, k.hostIPs())
		case it.ResourceFieldRef != nil:
			var c *corev1.Container
			if len(pod.Spec.Containers) > 0 {
				c = &pod.Spec.Containers[0]
			}
			v, err = resourceFieldValue(pod, c, it.ResourceFieldRef, k.allocatable())
		}
		if err != nil {
			return nil, err
		}
		m := def
		if it.Mode != nil {
			m = modeOr(it.Mode, 0)
		}
		out = append(out, volumeFile{path: it.Path, data: []byte(v), mode: m})
	}
	return out, nil
}

func (k *Kubelet) writeProjectedVolume(ctx context.Context, pod *corev1.Pod, volName string, src *corev1.ProjectedVolumeSource, dir string, podIPs []string) error {
	var files []volumeFile
	for _, s := range src.Sources {
		var fs []volumeFile
		var err error
		switch {
		case s.ConfigMap != nil:
			fs, err = k.configMapFiles(ctx, pod, s.ConfigMap.Name, s.ConfigMap.Items, src.DefaultMode, s.ConfigMap.Optional != nil && *s.ConfigMap.Optional)
		case s.Secret != nil:
			fs, err = k.secretFiles(ctx, pod, s.Secret.Name, s.Secret.Items, src.DefaultMode, s.Secret.Optional != nil && *s.Secret.Optional)
		case s.DownwardAPI != nil:
			fs, err = k.downwardFiles(pod, s.DownwardAPI.Items, src.DefaultMode, podIPs)
		case s.ServiceAccountToken != nil:
			var tok string
			tok, err = k.tokens.token(ctx, k.client(), pod, volName, s.ServiceAccountToken, k.cfg.Clock.Now())
			fs = []volumeFile{{path: s.ServiceAccountToken.Path, data: []byte(tok), mode: modeOr(src.DefaultMode, 0o644)}}
		default:
			err = errors.New("unsupported projected volume source")
		}
		if err != nil {
			return err
		}
		files = append(files, fs...)
	}
	return writeAtomic(dir, files)
}

// tokenCache keeps pods' service account tokens until 80 % of their life
// (or a day) has passed, as upstream's token manager.
type tokenCache struct {
	mu     sync.Mutex
	tokens map[string]cachedToken // by pod uid/volume/path
}

type cachedToken struct {
	token           string
	issued, refresh time.Time
}

// tokenClient asks the API for tokens.
type tokenClient = kubernetes.Interface

func (tc *tokenCache) token(ctx context.Context, client tokenClient, pod *corev1.Pod, volume string, src *corev1.ServiceAccountTokenProjection, now time.Time) (string, error) {
	key := string(pod.UID) + "/" + volume + "/" + src.Path
	tc.mu.Lock()
	c, ok := tc.tokens[key]
	tc.mu.Unlock()
	if ok && now.Before(c.refresh) {
		return c.token, nil
	}
	sa := pod.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: src.ExpirationSeconds,
		BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID},
	}}
	if src.Audience != "" {
		req.Spec.Audiences = []string{src.Audience}
	}
	if req.Spec.ExpirationSeconds == nil {
		req.Spec.ExpirationSeconds = ptr.To(int64(3600))
	}
	got, err := client.CoreV1().ServiceAccounts(pod.Namespace).CreateToken(ctx, sa, req, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("failed to fetch token: %w", err)
	}
	life := got.Status.ExpirationTimestamp.Sub(now)
	if life <= 0 {
		life = time.Duration(*req.Spec.ExpirationSeconds) * time.Second
	}
	c = cachedToken{token: got.Status.Token, issued: now, refresh: now.Add(min(life*8/10, 24*time.Hour))}
	tc.mu.Lock()
	if tc.tokens == nil {
		tc.tokens = map[string]cachedToken{}
	}
	tc.tokens[key] = c
	tc.mu.Unlock()
	return c.token, nil
}

// forgetPod drops a pod's tokens.
func (tc *tokenCache) forgetPod(uid string) {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	for k := range tc.tokens {
		if strings.HasPrefix(k, uid+"/") {
			delete(tc.tokens, k)
		}
	}
}

// writeAtomic makes dir hold exactly files, switching all at once. An
// unchanged payload is not rewritten.
func writeAtomic(dir string, files []volumeFile) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	sort.Slice(files, func(i, j int) bool { return files[i].path < files[j].path })
	for _, f := range files {
		if f.path == "" || filepath.IsAbs(f.path) || strings.HasPrefix(filepath.Clean(f.path), "..") || strings.HasPrefix(f.path, "..") {
			return fmt.Errorf("invalid file path %q", f.path)
		}
	}
	dataLink := filepath.Join(dir, "..data")
	if old, err := os.Readlink(dataLink); err == nil && sameFiles(filepath.Join(dir, old), files) {
		return nil
	}
	ts := "..rudder_" + strconv.FormatInt(time.Now().UnixNano(), 36)
	tsDir := filepath.Join(dir, ts)
	if err := os.Mkdir(tsDir, 0o755); err != nil {
		return err
	}
	for _, f := range files {
		p := filepath.Join(tsDir, f.path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, f.data, f.mode); err != nil {
			return err
		}
		if err := os.Chmod(p, f.mode); err != nil { // beat the umask
			return err
		}
	}
	oldTarget, _ := os.Readlink(dataLink)
	tmpLink := filepath.Join(dir, "..data_tmp")
	_ = os.Remove(tmpLink)
	if err := os.Symlink(ts, tmpLink); err != nil {
		return err
	}
	if err := os.Rename(tmpLink, dataLink); err != nil {
		return err
	}
	// The user-visible names: one symlink per top-level entry.
	want := map[string]bool{}
	for _, f := range files {
		top, _, _ := strings.Cut(f.path, "/")
		want[top] = true
	}
	for top := range want {
		link := filepath.Join(dir, top)
		target := filepath.Join("..data", top)
		if cur, err := os.Readlink(link); err == nil && cur == target {
			continue
		}
		_ = os.Remove(link)
		if err := os.Symlink(target, link); err != nil {
			return err
		}
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		n := e.Name()
		if strings.HasPrefix(n, "..") || want[n] {
			continue
		}
		_ = os.Remove(filepath.Join(dir, n)) // a key that went away
	}
	if oldTarget != "" && oldTarget != ts {
		_ = os.RemoveAll(filepath.Join(dir, oldTarget))
	}
	return nil
}

// sameFiles reports whether dir holds exactly files, contents and modes.
func sameFiles(dir string, files []volumeFile) bool {
	n := 0
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			n++
		}
		return nil
	})
	if err != nil || n != len(files) {
		return false
	}
	for _, f := range files {
		p := filepath.Join(dir, f.path)
		b, err := os.ReadFile(p)
		fi, serr := os.Stat(p)
		if err != nil || serr != nil || !bytes.Equal(b, f.data) || fi.Mode().Perm() != f.mode {
			return false
		}
	}
	return true
}

// containerMounts are the CRI mounts of container c: its volume mounts,
// /etc/hosts (pods with their own network) and the termination message
// file.
func (k *Kubelet) containerMounts(pod *corev1.Pod, c *corev1.Container, vols map[string]podVolume, restartCount int32, podIPs []string) ([]*cri.Mount, error) {
	var out []*cri.Mount
	hasHosts := false
	for _, vm := range c.VolumeMounts {
		v, ok := vols[vm.Name]
		if !ok {
			return nil, configErrorf("cannot find volume %q to mount into container %q", vm.Name, c.Name)
		}
		host := v.hostPath
		if vm.SubPath != "" {
			sub := filepath.Clean(vm.SubPath)
			if filepath.IsAbs(sub) || sub == ".." || strings.HasPrefix(sub, "../") {
				return nil, configErrorf("invalid subPath %q", vm.SubPath)
			}
			host = filepath.Join(host, sub)
			if _, err := os.Stat(host); errors.Is(err, fs.ErrNotExist) && !v.readOnly {
				if err := os.MkdirAll(host, 0o777); err != nil {
					return nil, configErrorf("create subPath %q: %v", vm.SubPath, err)
				}
			}
		}
		m := &cri.Mount{ContainerPath: vm.MountPath, HostPath: host, Readonly: vm.ReadOnly || v.readOnly}
		if vm.MountPropagation != nil {
			switch *vm.MountPropagation {
			case corev1.MountPropagationHostToContainer:
				m.Propagation = cri.MountPropagation_PROPAGATION_HOST_TO_CONTAINER
			case corev1.MountPropagationBidirectional:
				m.Propagation = cri.MountPropagation_PROPAGATION_BIDIRECTIONAL
			}
		}
		if vm.MountPath == "/etc/hosts" {
			hasHosts = true
		}
		out = append(out, m)
	}
	// As upstream: the kubelet's /etc/hosts for pods with their own
	// address; otherwise the runtime's.
	if !pod.Spec.HostNetwork && !hasHosts && len(podIPs) > 0 {
		out = append(out, &cri.Mount{ContainerPath: "/etc/hosts", HostPath: filepath.Join(k.podDir(string(pod.UID)), "etc-hosts")})
	}
	if c.TerminationMessagePath != "" {
		p := terminationMessagePath(k.cfg.RootDir, string(pod.UID), c.Name, restartCount)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return nil, err
		}
		f, err := os.OpenFile(p, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o666)
		if err != nil {
			return nil, err
		}
		f.Close()
		_ = os.Chmod(p, 0o666)
		out = append(out, &cri.Mount{ContainerPath: c.TerminationMessagePath, HostPath: p})
	}
	return out, nil
}

// writeEtcHosts writes the pod's /etc/hosts: localhost, then its IPs
// with its hostname and hostAliases.
func (k *Kubelet) writeEtcHosts(pod *corev1.Pod, podIPs []string) error {
	var b strings.Builder
	b.WriteString("# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\nfe00::0\tip6-localnet\nfe00::0\tip6-mcastprefix\nfe00::1\tip6-allnodes\nfe00::2\tip6-allrouters\n")
	name := podHostname(pod)
	if pod.Spec.Subdomain != "" {
		fqdn := name + "." + pod.Spec.Subdomain + "." + pod.Namespace + ".svc." + k.cfg.ClusterDomain
		name = fqdn + "\t" + name
	}
	for _, ip := range podIPs {
		fmt.Fprintf(&b, "%s\t%s\n", ip, name)
	}
	if len(pod.Spec.HostAliases) > 0 {
		b.WriteString("\n# Entries added by HostAliases.\n")
		for _, a := range pod.Spec.HostAliases {
			fmt.Fprintf(&b, "%s\t%s\n", a.IP, strings.Join(a.Hostnames, "\t"))
		}
	}
	p := filepath.Join(k.podDir(string(pod.UID)), "etc-hosts")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	if cur, err := os.ReadFile(p); err == nil && string(cur) == b.String() {
		return nil
	}
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, []byte(b.String()), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, p)
}
