package framework

// pause executes the PAUSE instruction n (>= 1) times: a spinning helper
// tells the core it is waiting, which saves power and leaves the
// execution units to a hyper-thread sibling (on a VM, possibly the other
// vCPU, running the scheduling loop).
//
//go:noescape
func pause(n uint32)
