// Package nodeipam is the node IPAM controller ("node-ipam-controller"),
// as kube-controller-manager runs it with --allocate-node-cidrs: it cuts
// the cluster CIDR (rudder's --cluster-cidr, default 10.42.0.0/16) into
// node subnets (/24 for IPv4, /64 for IPv6) and writes one per family
// into every Node's spec.podCIDR and spec.podCIDRs that has none. The
// node's network (internal/network) waits for that field and builds its
// bridge, IPAM and routes from it.
//
// The state is the Nodes themselves. On start the controller reads every
// Node and marks the subnets they hold as taken — oldest node first, so
// if two nodes claim one subnet the older keeps it — then reconciles
// each node by name: a node without a CIDR gets the next free subnet
// (round-robin, so a subnet freed by a deleted node is not reused at
// once), a deleted node's subnets are freed. The API server makes
// spec.podCIDRs write-once, so a node is never renumbered under its
// pods. When the cluster CIDR is full, the node gets a Warning event
// CIDRNotAvailable and is tried again after FullRetry.
//
// cidrSet (the subnet arithmetic and ownership) is pure and tested
// alone; the reconciler reads the lister and patches Nodes.
//
// Usage, through the controller manager:
//
//	d := nodeipam.NewDescriptor(nodeipam.Config{ClusterCIDRs: []string{"10.42.0.0/16"}})
package nodeipam
