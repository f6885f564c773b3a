package proxy

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/google/nftables"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// capture is a fake netlink dialer for google/nftables: Flush hands it
// the whole batch, which kernel.send then sends in one datagram. The
// library asks the kernel to acknowledge every message and reads the
// acknowledgements one syscall each; for 100,000 rules that alone costs
// more than the sync budget. Without the ACK flag the kernel answers
// only for failed messages, and since nfnetlink processes a batch inside
// sendmsg, those answers are queued by the time it returns.
type capture struct {
	msgs []netlink.Message
}

func (c *capture) dial(req []netlink.Message) ([]netlink.Message, error) {
	c.msgs = append(c.msgs, req...)
	return nil, nil
}

// kernel is the proxy's netlink socket, opened in the node's network
// namespace (the library locks a thread, enters the namespace, opens the
// socket and leaves again; the socket stays bound to that namespace).
type kernel struct {
	nsPath string
	conn   *netlink.Conn
	nsFd   int
}

// openKernel opens the netfilter socket in the namespace at nsPath (""
// = this process's).
func openKernel(nsPath string) (*kernel, error) {
	k := &kernel{nsPath: nsPath, nsFd: -1}
	if nsPath != "" {
		fd, err := unix.Open(nsPath, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return nil, fmt.Errorf("network namespace %s: %w", nsPath, err)
		}
		k.nsFd = fd
	}
	cfg := &netlink.Config{}
	if k.nsFd >= 0 {
		cfg.NetNS = k.nsFd
	}
	conn, err := netlink.Dial(unix.NETLINK_NETFILTER, cfg)
	if err != nil {
		k.close()
		return nil, fmt.Errorf("netfilter socket: %w", err)
	}
	k.conn = conn
	// Big batches go in one datagram (as nft itself does): raise the
	// buffers past the sysctl caps, which root may.
	rc, err := conn.SyscallConn()
	if err == nil {
		rc.Control(func(fd uintptr) {
			_ = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_SNDBUFFORCE, 256<<20)
			_ = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 16<<20)
			// Errors need not echo the failed message back.
			_ = unix.SetsockoptInt(int(fd), unix.SOL_NETLINK, unix.NETLINK_CAP_ACK, 1)
		})
	}
	return k, nil
}

func (k *kernel) close() {
	if k.conn != nil {
		k.conn.Close()
		k.conn = nil
	}
	if k.nsFd >= 0 {
		unix.Close(k.nsFd)
		k.nsFd = -1
	}
}

// send commits b's messages as one transaction: all or nothing.
func (k *kernel) send(b *batch) error {
	if err := b.c.Flush(); err != nil { // encodes into b.msgs
		return fmt.Errorf("encoding the nftables batch: %w", err)
	}
	msgs := b.msgs.msgs
	b.msgs.msgs = nil
	if len(msgs) <= 2 { // only the batch begin and end
		return nil
	}
	for i := range msgs {
		msgs[i].Header.Flags &^= netlink.Acknowledge
	}
	// One datagram past ~12 MB makes the kernel drop the transaction
	// (ENOBUFS, measured on 6.18), so a big batch — only a full sync
	// of thousands of services — goes as several transactions in
	// order, each all or nothing. Each message depends only on earlier
	// ones, so any cut is valid.
	begin, end := msgs[0], msgs[len(msgs)-1]
	body := msgs[1 : len(msgs)-1]
	for len(body) > 0 {
		n, size := 0, 0
		for n < len(body) && (n == 0 || size+16+len(body[n].Data) <= maxBatchBytes) {
			size += 16 + len(body[n].Data)
			n++
		}
		chunk := make([]netlink.Message, 0, n+2)
		b, e := begin, end
		b.Header.Sequence, e.Header.Sequence = 0, 0
		chunk = append(append(append(chunk, b), body[:n]...), e)
		t0 := time.Now()
		sent, err := k.conn.SendMessages(chunk)
		if debugSend {
			println("DEBUG chunk", len(chunk), size, time.Since(t0).String())
		}
		if err != nil {
			return fmt.Errorf("sending the nftables batch (%d messages): %w", len(chunk), err)
		}
		if err := k.drainErrors(sent); err != nil {
			return err
		}
		body = body[n:]
	}
	return nil
}

var debugSend = os.Getenv("PROXY_DEBUG_SEND") != ""

// maxBatchBytes bounds one transaction's datagram.
const maxBatchBytes = 8 << 20

// drainErrors reads what the kernel queued for the batch just sent:
// nothing when it committed, one error per failed message otherwise.
func (k *kernel) drainErrors(sent []netlink.Message) error {
	rc, err := k.conn.SyscallConn()
	if err != nil {
		return err
	}
	var errs []error
	nerrs := 0
	buf := make([]byte, 64<<10)
	for {
		var n int
		var rerr error
		cerr := rc.Control(func(fd uintptr) {
			n, _, rerr = unix.Recvfrom(int(fd), buf, unix.MSG_DONTWAIT)
		})
		if cerr != nil {
			return cerr
		}
		if errors.Is(rerr, unix.EAGAIN) || errors.Is(rerr, unix.EWOULDBLOCK) {
			break
		}
		if errors.Is(rerr, unix.ENOBUFS) {
			// Answers were dropped: the batch failed in many places.
			errs = append(errs, fmt.Errorf("some answers lost: %w", rerr))
			continue
		}
		if rerr != nil {
			return fmt.Errorf("reading nftables answers: %w", rerr)
		}
		msgs, err := syscall.ParseNetlinkMessage(buf[:n])
		if err != nil {
			return fmt.Errorf("parsing nftables answers: %w", err)
		}
		for _, m := range msgs {
			if m.Header.Type != unix.NLMSG_ERROR || len(m.Data) < 4 {
				continue
			}
			errno := -int32(nativeUint32(m.Data[:4]))
			if errno == 0 {
				continue
			}
			nerrs++
			what := "message"
			for _, s := range sent {
				if s.Header.Sequence == m.Header.Seq {
					what = msgName(uint16(s.Header.Type))
					break
				}
			}
			if len(errs) < 5 {
				errs = append(errs, fmt.Errorf("%s (seq %d): %w", what, m.Header.Seq, syscall.Errno(errno)))
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("nftables transaction refused (%d errors of %d messages): %w", nerrs, len(sent), errors.Join(errs...))
	}
	return nil
}

func nativeUint32(b []byte) uint32 {
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}

func msgName(t uint16) string {
	switch t & 0xff {
	case unix.NFT_MSG_NEWTABLE:
		return "new table"
	case unix.NFT_MSG_DELTABLE:
		return "delete table"
	case unix.NFT_MSG_NEWCHAIN:
		return "new chain"
	case unix.NFT_MSG_DELCHAIN:
		return "delete chain"
	case unix.NFT_MSG_NEWRULE:
		return "new rule"
	case unix.NFT_MSG_DELRULE:
		return "flush chain"
	case unix.NFT_MSG_NEWSET:
		return "new set"
	case unix.NFT_MSG_DELSET:
		return "delete set"
	case unix.NFT_MSG_NEWSETELEM:
		return "new element"
	case unix.NFT_MSG_DELSETELEM:
		return "delete element"
	}
	return fmt.Sprintf("message type %d", t)
}

// listConn is a plain library connection in the namespace, for reads
// (tests, the rule count) and the table's removal.
func (k *kernel) listConn() (*nftables.Conn, error) {
	if k.nsFd >= 0 {
		return nftables.New(nftables.WithNetNSFd(k.nsFd))
	}
	return nftables.New()
}

// TableExists reports whether the proxy's table is in the namespace at
// nsPath ("" = this process's).
func TableExists(nsPath, table string) (bool, error) {
	k, err := openKernel(nsPath)
	if err != nil {
		return false, err
	}
	defer k.close()
	c, err := k.listConn()
	if err != nil {
		return false, err
	}
	_, err = c.ListTableOfFamily(table, nftables.TableFamilyIPv4)
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, unix.ENOENT) {
		return false, nil
	}
	return err == nil, err
}

// deleteTable removes the proxy's table if it is there.
func (k *kernel) deleteTable(name string) error {
	b, err := newBatch(name)
	if err != nil {
		return err
	}
	b.c.AddTable(b.table) // so the delete never fails on a missing table
	b.c.DelTable(b.table)
	return k.send(b)
}
