package network

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/containernetworking/cni/libcni"
	"github.com/containernetworking/cni/pkg/invoke"
	cnitypes "github.com/containernetworking/cni/pkg/types"
	types100 "github.com/containernetworking/cni/pkg/types/100"
	"github.com/containernetworking/cni/pkg/version"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// findCNIConfig returns the first CNI configuration in dir, in name
// order as the kubelet's CNI plugins pick it, or "" when there is none.
func findCNIConfig(dir string) (string, error) {
	files, err := libcni.ConfFiles(dir, []string{".conflist", ".conf", ".json"})
	if err != nil {
		return "", fmt.Errorf("network: CNI configurations in %s: %w", dir, err)
	}
	slices.Sort(files)
	if len(files) == 0 {
		return "", nil
	}
	return files[0], nil
}

// cniNet runs a CNI plugin chain through libcni. Plugins run as child
// processes started on a thread in the node's namespace (nsExec), so
// their host side is the node's.
type cniNet struct {
	cfg  Config
	list *libcni.NetworkConfigList
	cni  *libcni.CNIConfig
	dir  string // one record per attachment, for Teardown and the GC
}

func newCNI(cfg Config, file string) (*cniNet, error) {
	var list *libcni.NetworkConfigList
	var err error
	if strings.HasSuffix(file, ".conflist") {
		list, err = libcni.ConfListFromFile(file)
	} else {
		var c *libcni.NetworkConfig
		if c, err = libcni.ConfFromFile(file); err == nil {
			list, err = libcni.ConfListFromConf(c)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("network: CNI configuration %s: %w", file, err)
	}
	dir := filepath.Join(cfg.StateDir, "cni")
	if err := os.MkdirAll(filepath.Join(dir, "attachments"), 0o700); err != nil {
		return nil, fmt.Errorf("network: %w", err)
	}
	ex := &nsExec{nsPath: cfg.NodeNetNS}
	return &cniNet{cfg: cfg, list: list, dir: dir,
		cni: libcni.NewCNIConfigWithCacheDir(cfg.CNIBinDirs, filepath.Join(dir, "cache"), ex)}, nil
}

// attachment is what Teardown and the GC need to call DEL again.
type attachment struct {
	ID    string      `json:"id"`
	NetNS string      `json:"netns"`
	Args  [][2]string `json:"args"`
}

func (c *cniNet) recordPath(id string) string {
	return filepath.Join(c.dir, "attachments", filepath.Base(id)+".json")
}

func (c *cniNet) runtimeConf(a attachment) *libcni.RuntimeConf {
	return &libcni.RuntimeConf{ContainerID: a.ID, NetNS: a.NetNS, IfName: podIfName, Args: a.Args}
}

func (c *cniNet) setup(ctx context.Context, id, nsPath string, cfg *runtimeapi.PodSandboxConfig) ([]string, error) {
	md := cfg.GetMetadata()
	a := attachment{ID: id, NetNS: nsPath, Args: [][2]string{
		{"IgnoreUnknown", "1"},
		{"K8S_POD_NAMESPACE", md.GetNamespace()},
		{"K8S_POD_NAME", md.GetName()},
		{"K8S_POD_INFRA_CONTAINER_ID", id},
		{"K8S_POD_UID", md.GetUid()},
	}}
	// The record goes first: a crash during ADD leaves something for the
	// GC to DEL.
	b, _ := json.Marshal(a)
	if err := os.WriteFile(c.recordPath(id), b, 0o600); err != nil {
		return nil, fmt.Errorf("network: %w", err)
	}
	res, err := c.cni.AddNetworkList(ctx, c.list, c.runtimeConf(a))
	if err == nil {
		var ips []string
		if ips, err = resultIPs(res); err == nil {
			return ips, nil
		}
	}
	err = fmt.Errorf("network: CNI %s ADD: %w", c.list.Name, err)
	if derr := c.teardown(context.WithoutCancel(ctx), id, nsPath); derr != nil {
		err = errors.Join(err, derr)
	}
	return nil, err
}

// resultIPs are the result's addresses, IPv4 first.
func resultIPs(res cnitypes.Result) ([]string, error) {
	r, err := types100.NewResultFromResult(res)
	if err != nil {
		return nil, err
	}
	if len(r.IPs) == 0 {
		return nil, errors.New("the plugins gave the pod no address")
	}
	return ipsOf(r), nil
}

func ipsOf(r *types100.Result) []string {
	var v4, v6 []string
	for _, ip := range r.IPs {
		if ip.Address.IP.To4() != nil {
			v4 = append(v4, ip.Address.IP.String())
		} else {
			v6 = append(v6, ip.Address.IP.String())
		}
	}
	return append(v4, v6...)
}

func (c *cniNet) teardown(ctx context.Context, id, nsPath string) error {
	a := attachment{ID: id, NetNS: nsPath}
	if b, err := os.ReadFile(c.recordPath(id)); err == nil {
		json.Unmarshal(b, &a)
	} else if os.IsNotExist(err) {
		return nil // never set up, or torn down already
	}
	if !isNetNS(a.NetNS) {
		a.NetNS = "" // plugins clean up what they can without it
	}
	if err := c.cni.DelNetworkList(ctx, c.list, c.runtimeConf(a)); err != nil {
		return fmt.Errorf("network: CNI %s DEL: %w", c.list.Name, err)
	}
	if err := os.Remove(c.recordPath(id)); err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("network: %w", err)
	}
	return nil
}

func (c *cniNet) gc(ctx context.Context, live map[string]bool) error {
	ents, err := os.ReadDir(filepath.Join(c.dir, "attachments"))
	if err != nil {
		return fmt.Errorf("network: %w", err)
	}
	var errs []error
	for _, e := range ents {
		var a attachment
		b, err := os.ReadFile(filepath.Join(c.dir, "attachments", e.Name()))
		if err != nil || json.Unmarshal(b, &a) != nil || a.ID == "" {
			continue
		}
		if isNetNS(a.NetNS) && (live == nil || live[a.ID]) {
			continue
		}
		errs = append(errs, c.teardown(ctx, a.ID, a.NetNS))
	}
	return errors.Join(errs...)
}

// nsExec runs CNI plugins from a thread in the node's namespace.
type nsExec struct {
	nsPath string
	version.PluginDecoder
}

func (e *nsExec) ExecPlugin(ctx context.Context, pluginPath string, stdin []byte, environ []string) ([]byte, error) {
	var stdout, stderr bytes.Buffer
	err := inNetNS(e.nsPath, func() error {
		cmd := exec.CommandContext(ctx, pluginPath)
		cmd.Env, cmd.Stdin, cmd.Stdout, cmd.Stderr = environ, bytes.NewReader(stdin), &stdout, &stderr
		return cmd.Run()
	})
	if err != nil {
		// A plugin reports its error as JSON on stdout.
		var perr struct {
			Msg     string `json:"msg"`
			Details string `json:"details"`
		}
		if json.Unmarshal(stdout.Bytes(), &perr) == nil && perr.Msg != "" {
			return nil, fmt.Errorf("%s: %s %s", filepath.Base(pluginPath), perr.Msg, perr.Details)
		}
		return nil, fmt.Errorf("%s: %w: %s", filepath.Base(pluginPath), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.Bytes(), nil
}

func (e *nsExec) FindInPath(plugin string, paths []string) (string, error) {
	return invoke.FindInPath(plugin, paths)
}
