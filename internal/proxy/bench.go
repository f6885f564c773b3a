package proxy

import (
	"fmt"
	"net/netip"
	"time"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// SyncResult is one measurement of the sync path: planning, rendering
// and committing the table.
type SyncResult struct {
	Services, Endpoints int
	Rules               int
	// Full is a full sync of all services into an empty namespace;
	// FullCPU the CPU time (user + system: the kernel's share runs in
	// our sendmsg) it took, which a loaded machine does not inflate.
	Full, FullCPU time.Duration
	// OneEndpoint is the incremental sync after one endpoint of one
	// service changed its address (median of several).
	OneEndpoint time.Duration
	// EndpointRemoved is the sync after a service lost one endpoint: its
	// balancing rule changes, and the kernel re-walks the table.
	EndpointRemoved time.Duration
}

// MeasureSync fills the namespace at nsPath with services ClusterIP
// services of endpoints endpoints each, as the proxy would, and times a
// full sync and then one-endpoint changes. The table is removed after.
func MeasureSync(nsPath string, services, endpoints int) (SyncResult, error) {
	res := SyncResult{Services: services, Endpoints: endpoints}
	k, err := openKernel(nsPath)
	if err != nil {
		return res, err
	}
	defer k.close()
	const table = "rudder-proxy-bench"
	defer k.deleteTable(table)
	node := NodeInfo{Name: "bench", ClusterCIDR: netip.MustParsePrefix("10.42.0.0/16"), NodePortIPs: []netip.Addr{netip.MustParseAddr("192.168.0.2")}}
	svcs := make([]*corev1.Service, services)
	slices := make([]*discoveryv1.EndpointSlice, services)
	for i := range services {
		svcs[i], slices[i] = SyntheticService(i, endpoints)
	}

	cpu0 := cpuTime()
	start := time.Now()
	all := make(map[string][]PortPlan, services)
	for i, s := range svcs {
		all[s.Namespace+"/"+s.Name] = PlanService(s, slices[i:i+1], node)
	}
	rs, b, err := newRuleset(table).full(all, node.NodePortIPs, node.ClusterCIDR)
	if err != nil {
		return res, err
	}
	if err := k.send(b); err != nil {
		return res, err
	}
	res.Full = time.Since(start)
	res.FullCPU = cpuTime() - cpu0
	res.Rules = rs.rules

	var times []time.Duration
	for round := range 7 {
		i := (round * 7919) % services
		sl := slices[i].DeepCopy()
		sl.Endpoints[round%endpoints].Addresses = []string{fmt.Sprintf("10.43.%d.%d", round, 1+round)}
		slices[i] = sl
		start := time.Now()
		key := svcs[i].Namespace + "/" + svcs[i].Name
		b, err := rs.update(map[string][]PortPlan{key: PlanService(svcs[i], slices[i:i+1], node)}, node.NodePortIPs)
		if err != nil {
			return res, err
		}
		if err := k.send(b); err != nil {
			return res, err
		}
		times = append(times, time.Since(start))
	}
	res.OneEndpoint = median(times)

	times = times[:0]
	for round := range 5 {
		i := (round*7919 + 13) % services
		sl := slices[i].DeepCopy()
		sl.Endpoints = sl.Endpoints[:len(sl.Endpoints)-1]
		slices[i] = sl
		start := time.Now()
		key := svcs[i].Namespace + "/" + svcs[i].Name
		b, err := rs.update(map[string][]PortPlan{key: PlanService(svcs[i], slices[i:i+1], node)}, node.NodePortIPs)
		if err != nil {
			return res, err
		}
		if err := k.send(b); err != nil {
			return res, err
		}
		times = append(times, time.Since(start))
	}
	res.EndpointRemoved = median(times)
	return res, nil
}

// cpuTime is the process's user + system CPU time so far.
func cpuTime() time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func median(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
	return s[len(s)/2]
}

// SyntheticService is service number i (a ClusterIP service on port 80
// in 10.96.0.0/12) and its one EndpointSlice of n ready endpoints.
func SyntheticService(i, n int) (*corev1.Service, *discoveryv1.EndpointSlice) {
	name := fmt.Sprintf("svc-%d", i)
	ip := netip.AddrFrom4([4]byte{10, byte(96 + (i>>16)&0x0f), byte(i >> 8), byte(i)})
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "bench", Name: name},
		Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeClusterIP, ClusterIP: ip.String(), ClusterIPs: []string{ip.String()},
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}},
		},
	}
	sl := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: "bench", Name: name + "-1", Labels: map[string]string{discoveryv1.LabelServiceName: name}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](8080), Protocol: ptr.To(corev1.ProtocolTCP)}},
	}
	for j := range n {
		a := 10<<24 | 42<<16 | (i*n+j)%(1<<16)
		sl.Endpoints = append(sl.Endpoints, discoveryv1.Endpoint{
			Addresses:  []string{netip.AddrFrom4([4]byte{byte(a >> 24), byte(a >> 16), byte(a >> 8), byte(a)}).String()},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)},
			NodeName:   ptr.To(fmt.Sprintf("node-%d", j%3)),
		})
	}
	return svc, sl
}
