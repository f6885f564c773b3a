package storage

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.etcd.io/etcd/server/v3/etcdserver/api/v3client"
)

// Etcd is a running etcd member embedded in this process, or a client of an
// external cluster. Close stops the member (when embedded) after the client.
type Etcd struct {
	Client *clientv3.Client
	// Endpoints are the member's client URLs, for other processes.
	Endpoints []string
	member    *embed.Etcd
}

// EmbeddedConfig configures an embedded single-member etcd.
type EmbeddedConfig struct {
	// Dir holds the member's WAL and snapshots; created if missing.
	Dir string
	// QuotaBytes bounds the backend database (default 8 GiB, as upstream
	// recommends for a control plane).
	QuotaBytes int64
	// ReadyTimeout bounds how long start-up may take (default 60 s).
	ReadyTimeout time.Duration
}

// StartEmbedded starts a single-member etcd on loopback ports chosen by the
// kernel, and returns an in-process client that skips the network. Every
// write etcd acknowledges has been fsynced to its WAL, which is what makes
// a kill -9 lose nothing acknowledged.
func StartEmbedded(ctx context.Context, cfg EmbeddedConfig) (*Etcd, error) {
	if cfg.QuotaBytes == 0 {
		cfg.QuotaBytes = 8 << 30
	}
	if cfg.ReadyTimeout == 0 {
		cfg.ReadyTimeout = 60 * time.Second
	}
	// The ports are chosen by listening on port 0 and closing: another
	// process may take one before etcd binds it (tests start many servers
	// at once). Binding fails before etcd writes anything, so a few
	// attempts with new ports are safe.
	var member *embed.Etcd
	var clientURL url.URL
	var err error
	for attempt := 0; ; attempt++ {
		member, clientURL, err = startMember(cfg)
		if err == nil || attempt == 4 || !addrInUse(err) {
			break
		}
	}
	if err != nil {
		return nil, err
	}
	select {
	case <-member.Server.ReadyNotify():
	case err := <-member.Err():
		member.Close()
		return nil, fmt.Errorf("embedded etcd: %w", err)
	case <-time.After(cfg.ReadyTimeout):
		member.Close()
		return nil, fmt.Errorf("embedded etcd not ready after %s", cfg.ReadyTimeout)
	case <-ctx.Done():
		member.Close()
		return nil, ctx.Err()
	}
	slog.Info("embedded etcd ready", "dir", cfg.Dir, "client", clientURL.String())
	return &Etcd{Client: v3client.New(member.Server), Endpoints: []string{clientURL.String()}, member: member}, nil
}

// startMember starts the etcd member on fresh loopback ports.
func startMember(cfg EmbeddedConfig) (*embed.Etcd, url.URL, error) {
	clientURL, err := freeLoopbackURL()
	if err != nil {
		return nil, url.URL{}, fmt.Errorf("embedded etcd: client port: %w", err)
	}
	peerURL, err := freeLoopbackURL()
	if err != nil {
		return nil, url.URL{}, fmt.Errorf("embedded etcd: peer port: %w", err)
	}
	ec := embed.NewConfig()
	ec.Name = "rudder"
	ec.Dir = filepath.Clean(cfg.Dir)
	ec.ListenClientUrls = []url.URL{clientURL}
	ec.AdvertiseClientUrls = []url.URL{clientURL}
	ec.ListenPeerUrls = []url.URL{peerURL}
	ec.AdvertisePeerUrls = []url.URL{peerURL}
	ec.InitialCluster = ec.Name + "=" + peerURL.String()
	ec.LogLevel = "error"
	ec.ZapLoggerBuilder = embed.NewZapLoggerBuilder(etcdLogger())
	ec.QuotaBackendBytes = cfg.QuotaBytes
	// Kubernetes objects may be up to 3 MiB once encoded, plus the txn.
	ec.MaxRequestBytes = 4 << 20
	// A single member still waits a randomized 1–10 election ticks before
	// it leads (etcd fast-forwards all but those). With upstream's 100 ms
	// tick that is up to a second of every start spent idle; with no peers
	// to lose contact with, short ticks cost nothing but a few wakeups.
	ec.TickMs = 20
	ec.ElectionMs = 200
	// Compaction is ours (see Compactor): it follows the API server's
	// notion of history, not etcd's.
	ec.AutoCompactionRetention = "0"
	ec.EnableLogRotation = false

	member, err := embed.StartEtcd(ec)
	if err != nil {
		return nil, url.URL{}, fmt.Errorf("start embedded etcd in %s: %w", cfg.Dir, err)
	}
	return member, clientURL, nil
}

// addrInUse reports a port taken between choosing and binding it.
func addrInUse(err error) bool {
	return errors.Is(err, syscall.EADDRINUSE) || strings.Contains(err.Error(), "address already in use")
}

// Connect returns a client of an external etcd cluster.
func Connect(ctx context.Context, endpoints []string) (*Etcd, error) {
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:          endpoints,
		DialTimeout:        10 * time.Second,
		MaxCallSendMsgSize: 4 << 20,
		MaxCallRecvMsgSize: 0, // unlimited: a LIST of many objects is large
		Context:            ctx,
	})
	if err != nil {
		return nil, fmt.Errorf("connect to etcd %v: %w", endpoints, err)
	}
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := cli.Status(sctx, endpoints[0]); err != nil {
		cli.Close()
		return nil, fmt.Errorf("etcd %s not reachable: %w", endpoints[0], err)
	}
	return &Etcd{Client: cli, Endpoints: endpoints}, nil
}

// Close closes the client and stops an embedded member, waiting for it to
// flush and release its files.
func (e *Etcd) Close() {
	e.Client.Close()
	if e.member != nil {
		e.member.Close()
	}
}

func freeLoopbackURL() (url.URL, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return url.URL{}, err
	}
	addr := l.Addr().String()
	l.Close()
	return url.URL{Scheme: "http", Host: addr}, nil
}
