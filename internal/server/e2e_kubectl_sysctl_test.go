package server

import "testing"

// TestKubectlPodSysctls checks that a pod with invalid or duplicate sysctl
// names is refused with a 422 and upstream's field errors, as kubectl
// prints them, and that valid ones (dot and slash forms) are accepted.
func TestKubectlPodSysctls(t *testing.T) {
	k := newKubectlEnv(t)
	pod := func(name, sysctls string, hostNetwork bool) string {
		host := ""
		if hostNetwork {
			host = "  hostNetwork: true\n"
		}
		return "apiVersion: v1\nkind: Pod\nmetadata:\n  name: " + name + "\nspec:\n" + host +
			"  securityContext:\n    sysctls:\n" + sysctls +
			"  containers:\n  - name: c\n    image: nginx\n"
	}
	const regex = `^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?$`
	k.runSteps(t, []step{
		{name: "invalid and duplicate names", args: []string{"create", "-f", "-"}, code: 1,
			stdin: pod("bad", "    - {name: Kernel.Bad, value: '1'}\n    - {name: kernel.shm_rmid_forced, value: '1'}\n"+
				"    - {name: kernel.shm_rmid_forced, value: '0'}\n    - {name: 'net..x', value: '1'}\n", false),
			err: "The Pod \"bad\" is invalid: \n" +
				"* spec.securityContext.sysctls[0].name: Invalid value: \"Kernel.Bad\": must have at most 253 characters and match regex " + regex + "\n" +
				"* spec.securityContext.sysctls[2].name: Duplicate value: \"kernel.shm_rmid_forced\"\n" +
				"* spec.securityContext.sysctls[3].name: Invalid value: \"net..x\": must have at most 253 characters and match regex " + regex},
		{name: "net sysctl with host network", args: []string{"create", "-f", "-"}, code: 1,
			stdin: pod("hostnet", "    - {name: net.ipv4.ip_forward, value: '1'}\n", true),
			err:   `The Pod "hostnet" is invalid: spec.securityContext.sysctls[0].name: Invalid value: "net.ipv4.ip_forward": may not be specified when 'hostNetwork' is true`},
		{name: "valid names", args: []string{"create", "-f", "-"},
			stdin: pod("good", "    - {name: kernel.shm_rmid_forced, value: '1'}\n    - {name: net/ipv4/conf/eth0.100/rp_filter, value: '1'}\n", false),
			out:   "pod/good created"},
	})
}
