package storage

import (
	"os"
	"strings"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// etcdLogger is the embedded member's logger: errors only (etcd warns of
// every slow request, which under load is most of them), without the ones
// every clean shutdown produces when etcd's listeners close under its own
// serving goroutines, and without the storage-version error a fresh
// single member logs once before its first Raft term is written.
func etcdLogger() *zap.Logger {
	enc := zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig())
	core := zapcore.NewCore(enc, zapcore.Lock(os.Stderr), zapcore.ErrorLevel)
	return zap.New(shutdownFilter{core})
}

type shutdownFilter struct{ zapcore.Core }

func (f shutdownFilter) With(fields []zapcore.Field) zapcore.Core {
	return shutdownFilter{f.Core.With(fields)}
}

func (f shutdownFilter) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if strings.HasPrefix(e.Message, "setting up serving from embedded etcd failed") ||
		strings.HasPrefix(e.Message, "stopping grpc server due to error") ||
		strings.HasPrefix(e.Message, "failed to update storage version") {
		return ce
	}
	return f.Core.Check(e, ce)
}
