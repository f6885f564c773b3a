// Package dns is the cluster DNS server: what CoreDNS with its kubernetes
// plugin is to a Kubernetes cluster. It answers the cluster zone
// (cluster.local) from Services, EndpointSlices and Namespaces it lists
// and watches, PTR queries for service and endpoint addresses, and hands
// every other name to the node's resolvers.
//
// # Answers
//
// Answers are CoreDNS's, byte for byte but for the message ID, the SOA
// serial (a timestamp) and the order of records in a multi-record answer
// (CoreDNS's is random): testdata/golden.txt holds CoreDNS v1.15.0's
// answers for a fixture of objects and TestGolden checks ours against it
// (scripts/dns-golden.sh regenerates it from a CoreDNS built from its Go
// module). The zone, as lookup.go lays it out:
//
//	web.ns.svc.cluster.local            A/AAAA  the cluster IPs
//	db.ns.svc.cluster.local             A/AAAA  a headless service: its ready endpoints
//	db-0.db.ns.svc.cluster.local        A       an endpoint by hostname (StatefulSet pods)
//	10-1-0-4.db.ns.svc.cluster.local    A       an endpoint without one, by address
//	_http._tcp.web.ns.svc.cluster.local SRV     per named port, target's address in additional
//	ext.ns.svc.cluster.local            CNAME   an ExternalName (A/AAAA also follow it)
//	1-2-3-4.ns.pod.cluster.local        A       any address ("pods insecure")
//	dns-version.cluster.local           TXT     "1.1.0"
//	4.3.2.1.in-addr.arpa                PTR     service or endpoint name; unknown: forwarded
//
// A name that cannot exist (unknown service, namespace or shape) is
// NXDOMAIN; a name that exists without records of the type asked is
// NOERROR with an empty answer (NODATA). Both carry the zone's SOA, whose
// minimum — the time resolvers cache the negative answer — is the record
// TTL (5 s). Headless services without ready endpoints are NXDOMAIN, as
// in CoreDNS. Until the first lists arrive, a name error is SERVFAIL, so
// nothing caches an NXDOMAIN that was only ignorance.
//
// # Transport
//
// Every address listens on UDP and TCP (miekg/dns). Malformed queries
// get FORMERR (or no answer when not even the header parses), a class
// other than IN is REFUSED, EDNS versions other than 0 get BADVERS, zone
// transfers are REFUSED. A UDP reply larger than the client's buffer (512
// bytes, or its EDNS size) is compressed, then cut to whole records with
// TC set, and the client retries over TCP (scrub.go).
//
// # Memory and floods
//
// Reflectors write the API objects straight into the index (store.go),
// each cut to the fields DNS uses, so memory follows the records served.
// Answers from the index do not block; forwarded queries are bounded
// (Config.MaxForwards in flight, the rest REFUSED at once) and so are TCP
// connections (Config.MaxTCPConns), so a flood costs CPU, not memory.
//
// # Usage
//
//	s, err := dns.New(dns.Config{Client: client, Addrs: []string{"10.0.0.5:53"}})
//	...
//	err = s.Run(ctx) // until ctx ends
//
// In a rudder cluster the agent runs one per node (agent.Config.DNSAddr)
// on the node's address, and pods reach it through the kube-dns Service
// in kube-system (cluster IP 10.96.0.10, the tenth of the service range,
// created by the server): it has no selector, and each agent lists its
// own server in the EndpointSlice kube-dns-<node> (managed-by
// rudder.dev/dns), which the service proxy turns into rules.
package dns
